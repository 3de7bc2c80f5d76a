package embedflow

import (
	"fmt"
	"html/template"
	"math"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/text/language"

	"github.com/assessd/assessd/internal/platform/errs"
)

// Look is a host's theme for the pages beside its strings. Only values
// that passed validateLook are kept, so the stylesheet they are written
// into cannot be broken out of.
type Look struct {
	Colors     Colors `json:"colors,omitzero"`
	FontFamily string `json:"fontFamily,omitempty"`
	Radius     *int32 `json:"radius,omitempty"`
	// Language is an extension to API.md's theme (decision 0110).
	Language string `json:"language,omitempty"`
}

// Colors are theme.colors: #rrggbb, empty for the default.
type Colors struct {
	Primary    string `json:"primary,omitempty"`
	Background string `json:"background,omitempty"`
	Text       string `json:"text,omitempty"`
}

// The look of a session that sets none.
const (
	defaultAccent     = "#1f5fbf"
	defaultText       = "#1d2430"
	defaultBackground = "#ffffff"
	// defaultFont is each platform's interface font, then a generic family.
	defaultFont   = `system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", "Noto Sans", "Liberation Sans", Arial, sans-serif`
	defaultRadius = 6
)

// genericFonts are CSS's generic font families: a list holding one always
// finds a font.
var genericFonts = map[string]bool{"serif": true, "sans-serif": true, "monospace": true, "cursive": true, "fantasy": true, "system-ui": true,
	"ui-serif": true, "ui-sans-serif": true, "ui-monospace": true, "ui-rounded": true, "math": true, "emoji": true, "fangsong": true}

var (
	hexColor   = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)
	fontFamily = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9 ,-]{0,99}$`)
	// rtlScripts are the scripts written right to left.
	rtlScripts = map[string]bool{"Arab": true, "Hebr": true, "Thaa": true, "Syrc": true, "Nkoo": true, "Adlm": true, "Rohg": true}
)

// validateLook checks and normalizes the theme's look. Text on the
// background and white on the accent must keep WCAG AA contrast (4.5:1),
// so a host's colours cannot make the pages unreadable.
func validateLook(l Look) (Look, error) {
	for field, c := range map[string]*string{"theme.colors.primary": &l.Colors.Primary, "theme.colors.text": &l.Colors.Text, "theme.colors.background": &l.Colors.Background} {
		if *c == "" {
			continue
		}
		if !hexColor.MatchString(*c) {
			return Look{}, errs.Invalid(field, "must be a colour such as #1f5fbf")
		}
		*c = strings.ToLower(*c)
	}
	if r := contrast(l.text(), l.background()); r < 4.5 {
		return Look{}, errs.Invalid("theme.colors.text", "has a contrast of %.1f:1 with the background; at least 4.5:1 is needed", r)
	}
	if r := contrast("#ffffff", l.accent()); r < 4.5 {
		return Look{}, errs.Invalid("theme.colors.primary", "has a contrast of %.1f:1 with white button text; at least 4.5:1 is needed", r)
	}
	if l.FontFamily != "" && !fontFamily.MatchString(l.FontFamily) {
		return Look{}, errs.Invalid("theme.fontFamily", "must be font names separated by commas (letters, digits, spaces, hyphens)")
	}
	if l.Radius != nil && (*l.Radius < 0 || *l.Radius > 24) {
		return Look{}, errs.Invalid("theme.radius", "must be between 0 and 24 (px)")
	}
	if l.Language != "" {
		tag, err := language.Parse(l.Language)
		if err != nil {
			return Look{}, errs.Invalid("theme.language", "must be a BCP 47 language tag such as en or ar")
		}
		l.Language = tag.String()
	}
	return l, nil
}

func (l Look) accent() string     { return or(l.Colors.Primary, defaultAccent) }
func (l Look) text() string       { return or(l.Colors.Text, defaultText) }
func (l Look) background() string { return or(l.Colors.Background, defaultBackground) }

// accentText is the accent where it is text on the background (links,
// figures, secondary buttons): the accent when it keeps 4.5:1 with the
// background, which validateLook checks only against white, else the
// text colour.
func (l Look) accentText() string {
	if contrast(l.accent(), l.background()) >= 4.5 {
		return l.accent()
	}
	return l.text()
}

// font is the host's font list followed by defaultFont when it names no
// generic family: the page is a document of its own, which the host's web
// fonts do not reach, so a font the reader lacks would fall back to the
// browser's serif.
func (l Look) font() string {
	if l.FontFamily == "" {
		return defaultFont
	}
	for name := range strings.SplitSeq(l.FontFamily, ",") {
		if genericFonts[strings.ToLower(strings.TrimSpace(name))] {
			return l.FontFamily
		}
	}
	return l.FontFamily + ", " + defaultFont
}

func or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// Lang is the page's language.
func (l Look) Lang() string { return or(l.Language, "en") }

// Dir is the page's writing direction.
func (l Look) Dir() string {
	script, _ := language.Make(l.Lang()).Script()
	if rtlScripts[script.String()] {
		return "rtl"
	}
	return "ltr"
}

// CSS sets the stylesheet's custom properties to the look. The values
// were validated, so they are safe inside the page's nonce'd style element.
func (l Look) CSS() template.CSS {
	radius := int32(defaultRadius)
	if l.Radius != nil {
		radius = *l.Radius
	}
	//nolint:gosec // every value was validated against a strict pattern (colours, font names, a number)
	return template.CSS(fmt.Sprintf(":root{--accent:%s;--accent-text:%s;--text:%s;--background:%s;--font:%s;--radius:%dpx}",
		l.accent(), l.accentText(), l.text(), l.background(), l.font(), radius))
}

// contrast is the WCAG contrast ratio of two #rrggbb colours.
func contrast(a, b string) float64 {
	la, lb := luminance(a), luminance(b)
	return (math.Max(la, lb) + 0.05) / (math.Min(la, lb) + 0.05)
}

func luminance(hex string) float64 {
	var rgb [3]float64
	for i := range rgb {
		v, _ := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
		c := float64(v) / 255
		if c <= 0.03928 {
			rgb[i] = c / 12.92
		} else {
			rgb[i] = math.Pow((c+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*rgb[0] + 0.7152*rgb[1] + 0.0722*rgb[2]
}
