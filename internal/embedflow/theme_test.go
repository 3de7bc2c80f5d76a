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
	if css := string(l.CSS()); !strings.Contains(css, "--accent:#6b1f80") || !strings.Contains(css, "--font:Noto Sans Arabic, sans-serif") || !strings.Contains(css, "--radius:4px") {
		t.Errorf("CSS %s", css)
	}
	if l.Dir() != "rtl" || l.Lang() != "ar-EG" || (Look{}).Dir() != "ltr" || (Look{Language: "he"}).Dir() != "rtl" {
		t.Errorf("direction: %s %s, default %s", l.Dir(), l.Lang(), (Look{}).Dir())
	}
}
