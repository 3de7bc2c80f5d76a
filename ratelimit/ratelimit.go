// Package ratelimit counts failures per key (a client address, an email)
// in token buckets, so repeated failed logins or authentications are slowed
// down while successful use is never limited.
package ratelimit

import (
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/time/rate"
)

// Failures is a bounded set of per-key failure buckets. A key may fail
// Burst times, refilled at Rate; beyond that Blocked reports it.
type Failures struct {
	rate    rate.Limit
	burst   int
	buckets *expirable.LRU[string, *rate.Limiter]
}

// NewFailures tracks up to size keys, each allowed burst failures refilled
// at perMinute per minute.
func NewFailures(size, burst int, perMinute float64) *Failures {
	return &Failures{
		rate:    rate.Limit(perMinute / 60),
		burst:   burst,
		buckets: expirable.NewLRU[string, *rate.Limiter](size, nil, 30*time.Minute),
	}
}

// Blocked reports whether key has used up its failures, and if so how long
// until it may try again.
func (f *Failures) Blocked(key string) (bool, time.Duration) {
	lim, ok := f.buckets.Get(key)
	if !ok {
		return false, 0
	}
	tokens := lim.Tokens()
	if tokens >= 1 {
		return false, 0
	}
	return true, time.Duration(float64(time.Second) * (1 - tokens) / float64(f.rate))
}

// Fail records one failure of key.
func (f *Failures) Fail(key string) {
	lim, ok := f.buckets.Get(key)
	if !ok {
		lim = rate.NewLimiter(f.rate, f.burst)
		f.buckets.Add(key, lim)
	}
	lim.Allow()
}

// ClientAddr is the remote IP of r. Deployments behind a proxy terminate
// the connection there, so per-address limits then apply per proxy; see
// docs/decisions/0002-api-keys.md for the trusted-proxy follow-up.
func ClientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
