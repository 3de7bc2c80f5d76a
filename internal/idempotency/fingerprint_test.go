package idempotency

import (
	"bytes"
	"crypto/sha256"
	"math/rand/v2"
	"mime/multipart"
	"testing"
)

// TestAFormSentAgainHasTheSameFingerprint: the same form with another
// boundary is the same body; another file in it is not.
func TestAFormSentAgainHasTheSameFingerprint(t *testing.T) {
	form := func(boundary, file string) (contentType string, body []byte) {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		if err := w.SetBoundary(boundary); err != nil {
			t.Fatal(err)
		}
		part, err := w.CreateFormFile("file", "sheet.png")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = part.Write([]byte(file))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return w.FormDataContentType(), b.Bytes()
	}
	fingerprint := func(contentType string, body []byte) []byte {
		h := newBodyHash(contentType)
		_, _ = h.Write(body)
		return h.Sum()
	}
	first := fingerprint(form("------------------------a1b2c3", "PNG bytes"))
	if again := fingerprint(form("------------------------d4e5f6", "PNG bytes")); !bytes.Equal(again, first) {
		t.Error("the same form with another boundary has another fingerprint")
	}
	if other := fingerprint(form("------------------------d4e5f6", "other PNG")); bytes.Equal(other, first) {
		t.Error("another file has the same fingerprint")
	}
	json := []byte(`{"name":"E"}`)
	if got, want := fingerprint("application/json", json), sha256.Sum256(json); !bytes.Equal(got, want[:]) {
		t.Error("a JSON body's fingerprint is not its SHA-256")
	}
}

// TestTheBoundaryIsLeftOutHoweverTheBodyIsRead: streamed in reads of any
// sizes, the fingerprint is that of the body with every boundary removed
// at once, also for boundaries that overlap themselves.
func TestTheBoundaryIsLeftOutHoweverTheBodyIsRead(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, boundary := range []string{"abab", "aab", "abcabd", "a"} {
		for range 300 {
			body := make([]byte, rng.IntN(60))
			for i := range body {
				body[i] = "abcd"[rng.IntN(4)]
			}
			want := sha256.Sum256(bytes.ReplaceAll(body, []byte(boundary), nil))
			h := newBodyHash("multipart/form-data; boundary=" + boundary)
			for rest := body; len(rest) > 0; {
				n := 1 + rng.IntN(len(rest))
				_, _ = h.Write(rest[:n])
				rest = rest[n:]
			}
			if got := h.Sum(); !bytes.Equal(got, want[:]) {
				t.Fatalf("boundary %q, body %q: the fingerprint is not that of the body without it", boundary, body)
			}
		}
	}
}
