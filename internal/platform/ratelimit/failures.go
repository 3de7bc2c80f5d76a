package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// Failures limits failed attempts per client address and credential (the
// login email, the API key id, the OAuth client id): an attacker guessing
// at one credential is slowed down, while other credentials used from the
// same address, such as another tenant's behind the same proxy, are not.
//
// A pair found not blocked is remembered for clearFor, so a client that
// keeps succeeding costs a Redis round trip a second, not one per request.
// The pair's own failures forget it at once; failures on other instances
// are seen once clearFor has passed or the pair fails here, so past the
// limit a guesser gets at most one more attempt per instance.
type Failures struct {
	limiter *Limiter
	limit   Limit
	clear   *expirable.LRU[string, struct{}]
}

const clearFor = time.Second

// Failures returns the failure limit name: burst failures per address and
// credential, refilled at perMinute a minute.
func (l *Limiter) Failures(name string, burst, perMinute int) *Failures {
	return &Failures{limiter: l, limit: Limit{Name: name, Rate: perMinute, Period: time.Minute, Burst: burst},
		clear: expirable.NewLRU[string, struct{}](localKeys, nil, clearFor)}
}

// Blocked reports whether addr has used up its failures for credential,
// and if so how long until it may try again. A blocked attempt is refused
// even with the right secret, so guessing learns nothing past the limit.
func (f *Failures) Blocked(ctx context.Context, addr, credential string) (bool, time.Duration) {
	key := f.key(addr, credential)
	if _, ok := f.clear.Get(key); ok {
		return false, 0
	}
	d := f.limiter.Peek(ctx, key, f.limit)
	if d.Allowed {
		f.clear.Add(key, struct{}{})
		return false, 0
	}
	f.limiter.Throttled("", f.limit)
	return true, d.RetryAfter
}

// Fail records one failure of addr with credential.
func (f *Failures) Fail(ctx context.Context, addr, credential string) {
	key := f.key(addr, credential)
	f.clear.Remove(key)
	f.limiter.Take(ctx, key, f.limit)
}

// key hashes the pair: credentials are client-supplied (any length, and
// emails are personal data) and must not be stored as they came.
func (f *Failures) key(addr, credential string) string {
	h := sha256.Sum256([]byte(addr + "\x00" + credential))
	return "fail:" + f.limit.Name + ":" + hex.EncodeToString(h[:16])
}
