package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Failures limits failed attempts per client address and credential (the
// login email, the API key id, the OAuth client id): an attacker guessing
// at one credential is slowed down, while other credentials used from the
// same address, such as another tenant's behind the same proxy, are not.
type Failures struct {
	limiter *Limiter
	limit   Limit
}

// Failures returns the failure limit name: burst failures per address and
// credential, refilled at perMinute a minute.
func (l *Limiter) Failures(name string, burst, perMinute int) *Failures {
	return &Failures{limiter: l, limit: Limit{Name: name, Rate: perMinute, Period: time.Minute, Burst: burst}}
}

// Blocked reports whether addr has used up its failures for credential,
// and if so how long until it may try again. A blocked attempt is refused
// even with the right secret, so guessing learns nothing past the limit.
func (f *Failures) Blocked(ctx context.Context, addr, credential string) (bool, time.Duration) {
	d := f.limiter.Peek(ctx, f.key(addr, credential), f.limit)
	if d.Allowed {
		return false, 0
	}
	f.limiter.Throttled("", f.limit)
	return true, d.RetryAfter
}

// Fail records one failure of addr with credential.
func (f *Failures) Fail(ctx context.Context, addr, credential string) {
	f.limiter.Take(ctx, f.key(addr, credential), f.limit)
}

// key hashes the pair: credentials are client-supplied (any length, and
// emails are personal data) and must not be stored as they came.
func (f *Failures) key(addr, credential string) string {
	h := sha256.Sum256([]byte(addr + "\x00" + credential))
	return "fail:" + f.limit.Name + ":" + hex.EncodeToString(h[:16])
}
