package tenancy

// eeaCountries are the ISO 3166-1 alpha-2 codes of the European Economic
// Area: the 27 EU member states plus Iceland, Liechtenstein and Norway.
var eeaCountries = map[string]bool{
	"AT": true, "BE": true, "BG": true, "HR": true, "CY": true, "CZ": true,
	"DK": true, "EE": true, "FI": true, "FR": true, "DE": true, "GR": true,
	"HU": true, "IE": true, "IT": true, "LV": true, "LT": true, "LU": true,
	"MT": true, "NL": true, "PL": true, "PT": true, "RO": true, "SK": true,
	"SI": true, "ES": true, "SE": true,
	"IS": true, "LI": true, "NO": true,
}

// DefaultAIRegion is the aiRegion of a new organization based in country:
// eu inside the European Economic Area, global elsewhere.
func DefaultAIRegion(country string) string {
	if eeaCountries[country] {
		return RegionEU
	}
	return RegionGlobal
}
