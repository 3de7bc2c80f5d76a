package clientaddr_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/assessd/assessd/internal/platform/clientaddr"
)

func TestResolve(t *testing.T) {
	res, err := clientaddr.Parse("10.0.0.0/8, 192.168.1.7, fd00::/8")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"untrusted peer: header ignored", "203.0.113.9:5555", []string{"198.51.100.1"}, "203.0.113.9"},
		{"trusted peer without header", "10.1.2.3:80", nil, "10.1.2.3"},
		{"trusted peer names the client", "10.1.2.3:80", []string{"198.51.100.1"}, "198.51.100.1"},
		{"spoofed entries left of the client are ignored", "10.1.2.3:80", []string{"1.1.1.1, 198.51.100.1"}, "198.51.100.1"},
		{"trusted hops are skipped right to left", "10.1.2.3:80", []string{"1.1.1.1, 198.51.100.1, 192.168.1.7", "10.9.9.9"}, "198.51.100.1"},
		{"all hops trusted: the leftmost", "10.1.2.3:80", []string{"10.5.5.5, 10.6.6.6"}, "10.5.5.5"},
		{"hop with a port", "10.1.2.3:80", []string{"198.51.100.1:4711"}, "198.51.100.1"},
		{"IPv6 hop and peer", "[fd00::1]:443", []string{"[2001:db8::5]:1234"}, "2001:db8::5"},
		{"IPv4-mapped peer", "[::ffff:10.1.2.3]:80", []string{"198.51.100.1"}, "198.51.100.1"},
		{"garbage from a trusted hop stops the walk", "10.1.2.3:80", []string{"198.51.100.1, nonsense"}, "10.1.2.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.peer
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := res.Resolve(r); got != tt.want {
				t.Errorf("Resolve = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNoTrustedProxies(t *testing.T) {
	res, err := clientaddr.Parse("")
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "127.0.0.1:9999"
	r.Header.Set("X-Forwarded-For", "198.51.100.1")
	if got := res.Resolve(r); got != "127.0.0.1" {
		t.Fatalf("Resolve = %q, want the socket peer", got)
	}
	var seen string
	res.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { seen = clientaddr.From(r) })).
		ServeHTTP(httptest.NewRecorder(), r)
	if seen != "127.0.0.1" {
		t.Fatalf("From after Middleware = %q", seen)
	}
}

func TestParseRejectsNonsense(t *testing.T) {
	for _, list := range []string{"10.0.0.0/33", "proxy.internal", "10.0.0.0/8,,nope"} {
		if _, err := clientaddr.Parse(list); err == nil {
			t.Errorf("Parse(%q) accepted", list)
		}
	}
}
