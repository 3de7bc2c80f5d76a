package egress

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/platform/errs"
)

func TestAddressRule(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"93.184.215.14", true},
		{"2606:4700::1111", true},
		{"127.0.0.1", false},
		{"::1", false},
		{"10.1.2.3", false},
		{"172.16.0.1", false},
		{"192.168.1.1", false},
		{"169.254.169.254", false}, // cloud metadata
		{"fd00:ec2::254", false},   // AWS metadata over IPv6
		{"fe80::1", false},
		{"100.64.0.1", false}, // CGNAT
		{"224.0.0.1", false},
		{"ff02::1", false},
		{"0.0.0.0", false},
		{"::", false},
		{"::ffff:127.0.0.1", false},
		{"64:ff9b::a00:1", false}, // NAT64 of 10.0.0.1
		{"255.255.255.255", false},
	} {
		if got := (Targets{}).allowed(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("allowed(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
	if !(Targets{AllowPrivate: true}).allowed(netip.MustParseAddr("127.0.0.1")) {
		t.Error("AllowPrivate refused loopback")
	}
	// Metadata endpoints hold credentials: refused even in development.
	for _, addr := range []string{"169.254.169.254", "::ffff:169.254.169.254", "fd00:ec2::254", "169.254.170.2", "100.100.100.200", "168.63.129.16"} {
		if (Targets{AllowPrivate: true}).allowed(netip.MustParseAddr(addr)) {
			t.Errorf("AllowPrivate allowed the metadata address %s", addr)
		}
	}
}

func TestCheckRefusesInternalTargets(t *testing.T) {
	ctx := context.Background()
	for _, raw := range []string{
		"https://127.0.0.1/hook", "https://localhost/hook", "https://[::1]:8443/", "https://10.0.0.5/",
		"https://169.254.169.254/latest/meta-data", "https://[fd00:ec2::254]/", "https://100.100.100.200/",
		"http://93.184.215.14/", "ftp://93.184.215.14/", "https://user:pw@93.184.215.14/", "/relative", "",
	} {
		err := (Targets{}).Check(ctx, "url", raw)
		if e, ok := errs.As(err); !ok || e.Kind != errs.KindInvalid || e.Field != "url" {
			t.Errorf("Check(%q) = %v, want an invalid url", raw, err)
		}
	}
	if err := (Targets{}).Check(ctx, "url", "https://93.184.215.14/hook"); err != nil {
		t.Errorf("public address refused: %v", err)
	}
	if err := (Targets{AllowPrivate: true}).Check(ctx, "url", "http://127.0.0.1:9999/hook"); err != nil {
		t.Errorf("AllowPrivate refused a local http URL: %v", err)
	}
	if err := (Targets{AllowPrivate: true}).Check(ctx, "url", "http://169.254.169.254/latest/meta-data"); err == nil {
		t.Error("AllowPrivate allowed the metadata service")
	}
}

// TestClientChecksTheConnectedAddress shows that the client
// refuses an internal address however the URL named it (a DNS answer
// changed after the endpoint was saved looks the same), and follows no
// redirect.
func TestClientChecksTheConnectedAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/", http.StatusFound)
	}))
	defer srv.Close()
	localhost := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	for _, u := range []string{srv.URL, localhost} {
		_, err := (Targets{}).Client().Get(u) //nolint:noctx // a test request
		if !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("GET %s: %v, want the address refused", u, err)
		}
	}
	resp, err := (Targets{AllowPrivate: true}).Client().Get(srv.URL) //nolint:noctx // a test request
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("status %d: the redirect was followed", resp.StatusCode)
	}
}

// A target's answer headers are read up to headerLimit: a request to one
// that answers with more fails instead of holding them.
func TestClientBoundsAnswerHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range 2 * headerLimit / 1024 {
			w.Header().Set(fmt.Sprintf("X-Pad-%d", i), strings.Repeat("a", 1000))
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	client := (Targets{AllowPrivate: true}).Client()
	resp, err := client.Get(srv.URL) //nolint:noctx // a test request
	if err == nil {
		_ = resp.Body.Close()
		t.Fatalf("read %d header fields past %d bytes", len(resp.Header), headerLimit)
	}
}
