package webhooks

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
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
