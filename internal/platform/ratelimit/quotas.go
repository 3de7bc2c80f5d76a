package ratelimit

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// Quotas holds each organization to its request quota, which policyOf
// decides (by plan and the operator's override). Policies are cached for
// PolicyTTL per process, so a plan or quota change takes effect on every
// instance within a minute without a lookup per request.
//
// An instance leases an organization's tokens from the shared bucket,
// several per Redis round trip when the organization is busy, and spends
// them locally. Leasing never admits more than the quota (the tokens are
// taken before they are spent); what it costs is that tokens one instance
// holds cannot serve another, so near the end of a quota an organization
// may be refused up to maxLease-1 requests early per instance, and
// tokens left in a lease when its entry expires (each minute) are lost.
// maxLease is a hundredth of the burst, so both stay within 1 % of the
// quota per instance; quotas under 200 a window lease one token at a time,
// exactly as without leasing.
type Quotas struct {
	limiter  *Limiter
	policyOf func(ctx context.Context, orgID string) (Limit, error)
	fallback Limit
	orgs     *expirable.LRU[string, *quota]
}

// quota is one organization's policy and this instance's lease of it.
type quota struct {
	key   string
	limit Limit

	mu sync.Mutex
	// tokens are leased and not yet spent.
	tokens int
	// size is how many the next lease asks for: doubled while leases run
	// out within leaseBusy, halved otherwise.
	size int
	// at and d are the time and the shared bucket's answer of the last
	// lease, from which the headers of locally spent tokens are derived.
	at time.Time
	d  Decision
}

// leaseBusy is how quickly a lease must be spent for the next one to grow:
// an organization spending tokens more slowly gains little from leases.
const (
	leaseBusy = 100 * time.Millisecond
	leaseMax  = 64
)

// PolicyTTL is how long an instance keeps an organization's policy before
// it asks policyOf again.
const PolicyTTL = time.Minute

// Quotas returns the request quotas of organizations, each policy kept for
// ttl (0 means PolicyTTL; tests shorten it). When policyOf fails (the
// database is down), fallback applies: a dependency outage must not turn
// into wrong 429s.
func (l *Limiter) Quotas(policyOf func(ctx context.Context, orgID string) (Limit, error), fallback Limit, ttl time.Duration) *Quotas {
	if ttl == 0 {
		ttl = PolicyTTL
	}
	return &Quotas{limiter: l, policyOf: policyOf, fallback: fallback,
		orgs: expirable.NewLRU[string, *quota](10_000, nil, ttl)}
}

// Take counts one request of orgID against its quota.
func (q *Quotas) Take(ctx context.Context, orgID string) Decision {
	return q.TakeFor(ctx, orgID, orgID)
}

// TakeFor counts one request against subject's quota: an organization's,
// or one of its users' (a student's, decision 0192) when the quotas are
// per user; orgID labels the metrics.
func (q *Quotas) TakeFor(ctx context.Context, orgID, subject string) Decision {
	e, ok := q.orgs.Get(subject)
	if !ok {
		lim, err := q.policyOf(ctx, subject)
		e = &quota{key: "quota:" + subject, limit: lim, size: 1}
		if err != nil {
			slog.WarnContext(ctx, "request quota unknown; applying the fallback", "org", orgID, "subject", subject, "err", err)
			e.limit = q.fallback
		} else {
			q.orgs.Add(subject, e)
		}
	}
	d := e.take(ctx, q.limiter)
	if !d.Allowed {
		name := "org_quota"
		if subject != orgID {
			name = "user_quota"
		}
		q.limiter.Throttled(orgID, Limit{Name: name})
	}
	return d
}

// take spends a leased token, leasing more when none is left. Concurrent
// requests of the organization wait for one lease rather than each
// asking Redis.
func (e *quota) take(ctx context.Context, l *Limiter) Decision {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	if e.tokens <= 0 {
		if now.Sub(e.at) < leaseBusy {
			e.size = min(e.size*2, max(1, e.limit.Burst/100), leaseMax)
		} else {
			e.size = max(e.size/2, 1)
		}
		d, taken := l.decide(ctx, e.key, e.limit, e.size)
		if !d.Allowed {
			return d
		}
		e.tokens, e.at, e.d = taken, now, d
	}
	e.tokens--
	// The shared bucket has refilled since the lease, and the tokens
	// still held here are the organization's too.
	d, elapsed := e.d, now.Sub(e.at)
	if every := e.limit.Period / time.Duration(max(e.limit.Rate, 1)); every > 0 {
		d.Remaining = min(d.Remaining+int(elapsed/every), e.limit.Burst)
	}
	d.Remaining += e.tokens
	d.ResetAfter = max(d.ResetAfter-elapsed, 0)
	return d
}

// SetHeaders writes d as the RateLimit-Policy and RateLimit fields of
// draft-ietf-httpapi-ratelimit-headers (structured-field form), e.g.
// `RateLimit-Policy: "pro";q=1200;w=60` and `RateLimit: "pro";r=1199;t=1`,
// and Retry-After when d refused the request.
func (d Decision) SetHeaders(h http.Header) {
	// Every API response carries them: both values are built in one buffer
	// and sliced from one string, under the names as Header.Set would
	// canonicalize them (which it does without allocating when they already
	// are).
	var buf [128]byte
	b := strconv.AppendQuote(buf[:0], d.Limit.Name)
	name := len(b)
	b = appendParam(b, ";q=", d.Limit.Rate)
	b = appendParam(b, ";w=", seconds(d.Limit.Period))
	policy := len(b)
	b = append(b, b[:name]...)
	b = appendParam(b, ";r=", d.Remaining)
	b = appendParam(b, ";t=", seconds(d.ResetAfter))
	values := string(b)
	h.Set("Ratelimit-Policy", values[:policy])
	h.Set("Ratelimit", values[policy:])
	if !d.Allowed {
		h.Set("Retry-After", strconv.Itoa(RetryAfterSeconds(d.RetryAfter)))
	}
}

// appendParam appends a structured field's parameter, such as ";q=1200".
func appendParam(b []byte, key string, v int) []byte {
	return strconv.AppendInt(append(b, key...), int64(v), 10)
}

// RetryAfterSeconds is the Retry-After value for a wait: whole seconds,
// rounded up, at least one.
func RetryAfterSeconds(wait time.Duration) int { return max(1, seconds(wait)) }

func seconds(d time.Duration) int { return int(math.Ceil(d.Seconds())) }
