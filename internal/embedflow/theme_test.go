package embedflow

import (
	"strings"
	"testing"
)

func TestValidateLook(t *testing.T) {
	t.Parallel()
	radius := int32(30)
	for name, l := range map[string]Look{
		"injection in a colour": {Colors: Colors{Primary: "#000;}body{display:none"}},
		"named colour":          {Colors: Colors{Text: "red"}},
		"injection in the font": {FontFamily: "x;}</style><script>"},
		"quote in the font":     {FontFamily: `"Inter"`},
		"radius out of range":   {Radius: &radius},
		"unreadable text":       {Colors: Colors{Text: "#eeeeee"}},
		"pale accent":           {Colors: Colors{Primary: "#ffcc00"}},
		"not a language":        {Language: "not a language"},
	} {
		if _, err := validateLook(l); err == nil {
			t.Errorf("%s: accepted %+v", name, l)
		}
	}
	l, err := validateLook(Look{Colors: Colors{Primary: "#6B1F80"}, FontFamily: "Noto Sans Arabic, sans-serif", Language: "ar-EG"})
	if err != nil {
		t.Fatal(err)
	}
	if css := string(l.CSS()); !strings.Contains(css, "--accent:#6b1f80") || !strings.Contains(css, "--font:Noto Sans Arabic, sans-serif") || !strings.Contains(css, "--radius:6px") {
		t.Errorf("CSS %s", css)
	}
	// A font list without a generic family ends with the default stack, and
	// an accent too dark on the background gives way to the text colour.
	dark, err := validateLook(Look{Colors: Colors{Primary: "#1f5fbf", Text: "#f0f0f0", Background: "#101010"}, FontFamily: "Inter"})
	if err != nil {
		t.Fatal(err)
	}
	if css := string(dark.CSS()); !strings.Contains(css, `--font:Inter, system-ui, -apple-system, "Segoe UI", Roboto,`) || !strings.HasSuffix(css, "sans-serif;--radius:6px}") ||
		!strings.Contains(css, "--accent:#1f5fbf;--accent-text:#f0f0f0;") {
		t.Errorf("CSS of a dark theme with Inter: %s", css)
	}
	if css := string(l.CSS()); !strings.Contains(css, "--accent-text:#6b1f80;") {
		t.Errorf("CSS %s", css)
	}
	if l.Dir() != "rtl" || l.Lang() != "ar-EG" || (Look{}).Dir() != "ltr" || (Look{Language: "he"}).Dir() != "rtl" {
		t.Errorf("direction: %s %s, default %s", l.Dir(), l.Lang(), (Look{}).Dir())
	}
}
