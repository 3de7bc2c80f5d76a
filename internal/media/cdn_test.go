package media_test

import (
	"testing"

	"github.com/assessd/assessd/internal/media"
)

func TestOnCDN(t *testing.T) {
	f := media.NewFetcher([]string{"https://cdn.assessd.example/media/", " https://files.assessd.example "}, media.Options{})
	for _, tc := range []struct {
		url  string
		want bool
	}{
		{"https://cdn.assessd.example/media/a.png", true},
		{"https://cdn.assessd.example/media/answers/r1/essay.pdf?sig=abc#page=2", true},
		{"https://CDN.Assessd.Example/media/a.png", true},
		{"HTTPS://cdn.assessd.example/media/a.png", true},
		{"https://cdn.assessd.example/media/%C3%A9t%C3%A9.png", true},
		{"https://files.assessd.example/any/where.png", true},

		{"http://cdn.assessd.example/media/a.png", false},           // scheme differs from the prefix
		{"https://cdn.assessd.example.evil.com/media/a.png", false}, // host suffix trick
		{"https://files.assessd.example.attacker.net/a.png", false},
		{"https://evil.com/cdn.assessd.example/media/a.png", false},
		{"https://cdn.assessd.example@evil.com/media/a.png", false}, // userinfo, host is evil.com
		{"https://user:pw@cdn.assessd.example/media/a.png", false},
		{"https://cdn.assessd.example:8443/media/a.png", false},
		{"https://cdn.assessd.example./media/a.png", false},
		{"https://cdn.assessd.example/media-private/a.png", false}, // not on a segment boundary
		{"https://cdn.assessd.example/other/a.png", false},
		{"https://cdn.assessd.example/", false},
		{"https://cdn.assessd.example/media/../admin/x", false},
		{"https://cdn.assessd.example/media/..%2fadmin/x", false},
		{"https://cdn.assessd.example/media/..%2Fadmin/x", false},
		{"https://cdn.assessd.example/media/%2e%2e/admin/x", false},
		{"https://cdn.assessd.example/media/./a.png", false},
		{`https://cdn.assessd.example/media/..\admin`, false},
		{"https://cdn.assessd.example/media/..%5cadmin", false},
		{"https://cdn.assessd.example/media/a%00.png", false},
		{"https:cdn.assessd.example/media/a.png", false}, // opaque
		{"//cdn.assessd.example/media/a.png", false},     // scheme-relative
		{"/media/a.png", false},
		{"ftp://cdn.assessd.example/media/a.png", false},
		{"file:///etc/passwd", false},
		{"data:image/png;base64,iVBORw0KGgo=", false},
		{"javascript:alert(1)", false},
		{"", false},
		{"https://[::1]/media/a.png", false},
	} {
		if got := f.OnCDN(tc.url); got != tc.want {
			t.Errorf("OnCDN(%q) = %v, want %v", tc.url, got, tc.want)
		}
	}
}

func TestOnCDNIgnoresInvalidPrefixes(t *testing.T) {
	f := media.NewFetcher([]string{"", "cdn.assessd.example/media/", "ftp://cdn.assessd.example/", "https://u@cdn.assessd.example/", "https://cdn.assessd.example/?x=1"}, media.Options{})
	for _, u := range []string{"https://cdn.assessd.example/media/a.png", "ftp://cdn.assessd.example/a.png", "https://cdn.assessd.example/a.png"} {
		if f.OnCDN(u) {
			t.Errorf("OnCDN(%q) = true with only invalid prefixes", u)
		}
	}
}
