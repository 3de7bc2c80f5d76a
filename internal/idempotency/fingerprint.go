package idempotency

import (
	"crypto/sha256"
	"hash"
	"mime"
	"strings"
)

// bodyHash hashes a request body as its fingerprint: its bytes, but for a
// multipart body's boundary, which clients (curl, Python's requests) draw
// anew on every attempt, so the same form sent again would read as
// another body. The boundary's occurrences are left out as the bytes
// stream past (a KMP matcher), however the body arrives in reads.
type bodyHash struct {
	sum      hash.Hash
	boundary []byte
	// fallback[i] is the length of the longest proper prefix of
	// boundary[:i+1] that is also its suffix.
	fallback []int
	// matched is how many bytes of boundary the stream ends with; they
	// are held back until they turn out not to be one.
	matched int
}

func newBodyHash(contentType string) *bodyHash {
	h := &bodyHash{sum: sha256.New()}
	media, params, err := mime.ParseMediaType(contentType)
	if err != nil || !strings.HasPrefix(media, "multipart/") || params["boundary"] == "" {
		return h
	}
	h.boundary = []byte(params["boundary"])
	h.fallback = make([]int, len(h.boundary))
	for i, k := 1, 0; i < len(h.boundary); i++ {
		for k > 0 && h.boundary[i] != h.boundary[k] {
			k = h.fallback[k-1]
		}
		if h.boundary[i] == h.boundary[k] {
			k++
		}
		h.fallback[i] = k
	}
	return h
}

func (h *bodyHash) Write(p []byte) (int, error) {
	if h.boundary == nil {
		return h.sum.Write(p)
	}
	for _, c := range p {
		for h.matched > 0 && h.boundary[h.matched] != c {
			// The held bytes but the longest prefix still matching
			// are not the boundary.
			k := h.fallback[h.matched-1]
			h.sum.Write(h.boundary[:h.matched-k])
			h.matched = k
		}
		if h.boundary[h.matched] != c {
			h.sum.Write([]byte{c})
			continue
		}
		if h.matched++; h.matched == len(h.boundary) {
			h.matched = 0 // a whole boundary: left out
		}
	}
	return len(p), nil
}

// Sum returns the fingerprint of the body written.
func (h *bodyHash) Sum() []byte {
	if h.matched > 0 {
		h.sum.Write(h.boundary[:h.matched])
		h.matched = 0
	}
	return h.sum.Sum(nil)
}
