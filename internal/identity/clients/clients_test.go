package clients

import (
	"fmt"
	"slices"
	"testing"
)

func TestClientRedirectURIs(t *testing.T) {
	t.Parallel()
	uris := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("https://app.example/cb%d", i)
		}
		return out
	}
	for _, c := range []struct {
		name  string
		given []string
		want  []string // nil: refused
	}{
		{"repeated and blank ones collapse", []string{" https://a.example/cb", "", "https://a.example/cb ", "https://b.example/cb"},
			[]string{"https://a.example/cb", "https://b.example/cb"}},
		{"twenty", uris(20), uris(20)},
		{"twenty once more each", append(uris(20), uris(20)...), uris(20)},
		{"twenty-one", uris(21), nil},
		{"thousands", uris(20_000), nil},
		{"none", []string{" "}, nil},
	} {
		in := ClientInput{Name: "App", RedirectURIs: c.given}
		err := in.validate()
		switch {
		case c.want == nil && err == nil:
			t.Errorf("%s: accepted %d URIs", c.name, len(in.RedirectURIs))
		case c.want != nil && (err != nil || !slices.Equal(in.RedirectURIs, c.want)):
			t.Errorf("%s: %v, %v", c.name, in.RedirectURIs, err)
		}
	}
}
