package ratelimit

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// Quotas holds each organization to its request quota, which policyOf
// decides (by plan). Policies are cached for a minute per process, so a
// plan change takes effect within a minute without a lookup per request.
type Quotas struct {
	limiter  *Limiter
	policyOf func(ctx context.Context, orgID string) (Limit, error)
	fallback Limit
	policies *expirable.LRU[string, Limit]
}

// Quotas returns the request quotas of organizations. When policyOf fails
// (the database is down), fallback applies: a dependency outage must not
// turn into wrong 429s.
func (l *Limiter) Quotas(policyOf func(ctx context.Context, orgID string) (Limit, error), fallback Limit) *Quotas {
	return &Quotas{limiter: l, policyOf: policyOf, fallback: fallback,
		policies: expirable.NewLRU[string, Limit](10_000, nil, time.Minute)}
}

// Take counts one request of orgID against its quota.
func (q *Quotas) Take(ctx context.Context, orgID string) Decision {
	lim, ok := q.policies.Get(orgID)
	if !ok {
		var err error
		if lim, err = q.policyOf(ctx, orgID); err != nil {
			slog.WarnContext(ctx, "request quota unknown; applying the fallback", "org", orgID, "err", err)
			lim = q.fallback
		} else {
			q.policies.Add(orgID, lim)
		}
	}
	d := q.limiter.Take(ctx, "quota:"+orgID, lim)
	if !d.Allowed {
		q.limiter.Throttled(orgID, Limit{Name: "org_quota"})
	}
	return d
}

// SetHeaders writes d as the RateLimit-Policy and RateLimit fields of
// draft-ietf-httpapi-ratelimit-headers (structured-field form), e.g.
// `RateLimit-Policy: "pro";q=1200;w=60` and `RateLimit: "pro";r=1199;t=1`,
// and Retry-After when d refused the request.
func (d Decision) SetHeaders(h http.Header) {
	name := strconv.Quote(d.Limit.Name)
	h.Set("RateLimit-Policy", name+";q="+strconv.Itoa(d.Limit.Rate)+";w="+strconv.Itoa(seconds(d.Limit.Period)))
	h.Set("RateLimit", name+";r="+strconv.Itoa(d.Remaining)+";t="+strconv.Itoa(seconds(d.ResetAfter)))
	if !d.Allowed {
		h.Set("Retry-After", strconv.Itoa(RetryAfterSeconds(d.RetryAfter)))
	}
}

// RetryAfterSeconds is the Retry-After value for a wait: whole seconds,
// rounded up, at least one.
func RetryAfterSeconds(wait time.Duration) int { return max(1, seconds(wait)) }

func seconds(d time.Duration) int { return int(math.Ceil(d.Seconds())) }
