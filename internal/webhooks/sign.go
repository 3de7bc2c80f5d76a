package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// secretPrefix starts every signing secret shown to integrators; the rest
// is the base64 of the key (Standard Webhooks).
const secretPrefix = "whsec_"

// keySize is the length of a signing key: 32 random bytes, as long as the
// HMAC-SHA256 output.
const keySize = 32

// newKey returns a fresh signing key and the secret that shows it.
func newKey() (key []byte, secret string) {
	key = make([]byte, keySize)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (Go 1.24+)
	return key, secretPrefix + base64.StdEncoding.EncodeToString(key)
}

// Headers are the Standard Webhooks headers of one delivery.
type Headers struct {
	ID, Timestamp, Signature string
}

// Sign returns the headers of message id sent at t with body, signed with
// every key: one space-separated "v1,<base64 HMAC-SHA256>" per key, so a
// receiver that knows either the new or the previous secret of a rotation
// accepts it.
func Sign(keys [][]byte, id string, t time.Time, body []byte) Headers {
	ts := strconv.FormatInt(t.Unix(), 10)
	sigs := make([]string, len(keys))
	for i, k := range keys {
		mac := hmac.New(sha256.New, k)
		mac.Write([]byte(id + "." + ts + "."))
		mac.Write(body)
		sigs[i] = "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	}
	return Headers{ID: id, Timestamp: ts, Signature: strings.Join(sigs, " ")}
}
