package exchange

import (
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
)

// QTI namespaces and the values assessd writes and recognises.
const (
	nsQTI3         = "http://www.imsglobal.org/xsd/imsqtiasi_v3p0"
	nsQTI21        = "http://www.imsglobal.org/xsd/imsqti_v2p1"
	nsCP3          = "http://www.imsglobal.org/xsd/qti/qtiv3p0/imscp_v1p1"
	nsXSI          = "http://www.w3.org/2001/XMLSchema-instance"
	schemaQTI3     = "https://purl.imsglobal.org/spec/qti/v3p0/schema/xsd/imsqti_asiv3p0p1_v1p0.xsd"
	schemaCP3      = "https://purl.imsglobal.org/spec/qti/v3p0/schema/xsd/imsqtiv3p0_imscpv1p2_v1p0.xsd"
	toolName       = "assessd"
	toolVersion    = "1"
	responseID     = "RESPONSE"
	scoreID        = "SCORE"
	maxScoreID     = "MAXSCORE"
	feedbackID     = "FEEDBACK"
	promptClass    = "assessd-prompt"
	unitClass      = "assessd-unit"
	instructsClass = "assessd-instructions"
	// customClass marks the interaction of a custom type's question, whose
	// definition only the side files carry.
	customClass = "assessd-custom-type"
	// numericEpsilon is the slack assessd's numeric condition adds to the
	// tolerance (float noise); the exported tolerance includes it so a QTI
	// player agrees at the boundary, and import takes it off again.
	numericEpsilon = 1e-9
	// choiceIDPrefix marks an option id that is not an XML name and was
	// hex-encoded into a QTI identifier.
	choiceIDPrefix = "X_"
	// manifest, package side file and item side file names.
	manifestName    = "imsmanifest.xml"
	testName        = "test.xml"
	packageSideName = "assessd.json"
	packageSchema   = "assessd.package/v1"
	itemSideSchema  = "assessd.item/v1"
	itemSideSuffix  = ".assessd.json"
	trueID, falseID = "true", "false"
)

// isNCName reports whether s is an XML name without colons (ASCII subset),
// the form QTI identifiers take.
func isNCName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'):
		case i > 0 && (r == '-' || r == '.' || (r >= '0' && r <= '9')):
		default:
			return false
		}
	}
	return true
}

// choiceIdentifier is the QTI identifier of an option id: the id itself
// when it is a valid identifier, else a reversible hex form.
func choiceIdentifier(id string) string {
	if isNCName(id) && !strings.HasPrefix(id, choiceIDPrefix) {
		return id
	}
	return choiceIDPrefix + hex.EncodeToString([]byte(id))
}

// optionID reverses choiceIdentifier.
func optionID(identifier string) string {
	if rest, ok := strings.CutPrefix(identifier, choiceIDPrefix); ok {
		if b, err := hex.DecodeString(rest); err == nil {
			return string(b)
		}
	}
	return identifier
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// qtiWhitespace is the whitespace JSONata's $trim normalises and XML
// Schema's \s matches: the same four characters.
func qtiWhitespace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }

// sortedKeys returns m's keys in order, for deterministic output.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
