package webhooks

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/platform/errs"
)

// TestSignMatchesTheSpecificationExample signs the example of the Standard
// Webhooks specification and checks the published signature.
func TestSignMatchesTheSpecificationExample(t *testing.T) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", secretPrefix))
	if err != nil {
		t.Fatal(err)
	}
	h := Sign([][]byte{key}, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; h.Signature != want {
		t.Fatalf("signature %q, want %q", h.Signature, want)
	}
	if h.Timestamp != "1614265330" {
		t.Fatalf("timestamp %q", h.Timestamp)
	}
	two := Sign([][]byte{key, []byte("previous")}, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if sigs := strings.Fields(two.Signature); len(sigs) != 2 || sigs[0] != h.Signature || !strings.HasPrefix(sigs[1], "v1,") {
		t.Fatalf("rotation signatures %q", two.Signature)
	}
}

func TestSealedKeysOpenOnlyForTheirEndpoint(t *testing.T) {
	s, err := newSealer(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	sealed := s.seal("whe_a", []byte("key"))
	if got, err := s.open("whe_a", sealed); err != nil || string(got) != "key" {
		t.Fatalf("open = %q, %v", got, err)
	}
	if _, err := s.open("whe_b", sealed); err == nil {
		t.Fatal("a key sealed for one endpoint opened for another")
	}
}

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
		err := (Targets{}).Check(ctx, raw)
		if e, ok := errs.As(err); !ok || e.Kind != errs.KindInvalid || e.Field != "url" {
			t.Errorf("Check(%q) = %v, want an invalid url", raw, err)
		}
	}
	if err := (Targets{}).Check(ctx, "https://93.184.215.14/hook"); err != nil {
		t.Errorf("public address refused: %v", err)
	}
	if err := (Targets{AllowPrivate: true}).Check(ctx, "http://127.0.0.1:9999/hook"); err != nil {
		t.Errorf("AllowPrivate refused a local http URL: %v", err)
	}
	if err := (Targets{AllowPrivate: true}).Check(ctx, "http://169.254.169.254/latest/meta-data"); err == nil {
		t.Error("AllowPrivate allowed the metadata service")
	}
}

// TestClientChecksTheConnectedAddress shows that the delivery client
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
		if !errors.Is(err, errForbiddenAddress) {
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

// A receiver's answer headers are read up to headerLimit: a delivery to
// one that answers with more fails instead of holding them.
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
