// Package ratelimit decides rate limits: failure limits that slow down
// credential guessing, and per-organization request quotas. Every instance
// shares the limits' state through Redis (GCRA buckets of
// github.com/go-redis/redis_rate); while Redis does not answer, each
// process decides alone with the same limits, so limits loosen during an
// outage but never fail a request.
package ratelimit

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
)

// Limit is a bucket: Burst events at once, refilled at Rate per Period.
// A Rate of zero or less is no limit.
type Limit struct {
	// Name identifies the limit in headers and metrics.
	Name   string
	Rate   int
	Period time.Duration
	Burst  int
}

// PerWindow is a quota of n events per window, all of which may come at
// once.
func PerWindow(name string, n int, window time.Duration) Limit {
	return Limit{Name: name, Rate: n, Period: window, Burst: n}
}

// Decision is the outcome of taking from (or looking at) a bucket.
type Decision struct {
	Limit   Limit
	Allowed bool
	// Remaining is how many more events the bucket allows right now.
	Remaining int
	// RetryAfter is how long until the next event is allowed; zero when
	// Allowed.
	RetryAfter time.Duration
	// ResetAfter is how long until the bucket is full again.
	ResetAfter time.Duration
}

// Options configures a Limiter.
type Options struct {
	// Redis shares the limits across instances; nil keeps them per process.
	Redis *redis.Client
	// Prefix namespaces the Redis keys, e.g. "assessd:rl:".
	Prefix string
	// Registerer receives the metrics; nil registers none.
	Registerer prometheus.Registerer
	// OrgLabel bounds the org label of the throttling metric
	// (observability.Metrics.Org); nil uses the id as is.
	OrgLabel func(orgID string) string
	Logger   *slog.Logger
}

// Timing of the Redis path: a decision never waits longer than
// redisTimeout for Redis, and after a failure Redis is left alone for
// redisPause, so an outage costs one slow request per pause, not one per
// request.
const (
	redisTimeout = 250 * time.Millisecond
	redisPause   = 5 * time.Second
	localKeys    = 100_000
	localIdle    = 30 * time.Minute
)

// Limiter decides limits, in Redis when it answers and per process
// otherwise.
type Limiter struct {
	client   *redis.Client
	shared   *redis_rate.Limiter
	prefix   string
	log      *slog.Logger
	orgLabel func(string) string

	mu    sync.Mutex
	local *expirable.LRU[string, *localBucket]

	pausedUntil atomic.Int64 // unix nanoseconds
	degraded    atomic.Bool

	throttled *prometheus.CounterVec
	fallbacks prometheus.Counter
}

type localBucket struct {
	limit Limit
	*rate.Limiter
}

// New returns a Limiter. With Redis it owns a client of its own on the
// same server, with short timeouts and no retries: a limit decision must
// stay fast while Redis is slow or down. Close releases it.
func New(opts Options) *Limiter {
	l := &Limiter{
		prefix:   opts.Prefix,
		log:      opts.Logger,
		orgLabel: opts.OrgLabel,
		local:    expirable.NewLRU[string, *localBucket](localKeys, nil, localIdle),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_rate_limited_requests_total",
			Help: "Requests refused with 429, by organization (_none before authentication) and limit.",
		}, []string{"org", "limit"}),
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "assessd_rate_limit_local_decisions_total",
			Help: "Rate-limit decisions taken per process because Redis did not answer.",
		}),
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	if l.orgLabel == nil {
		l.orgLabel = func(id string) string { return id }
	}
	if opts.Redis != nil {
		o := opts.Redis.Options()
		l.client = redis.NewClient(&redis.Options{
			Network: o.Network, Addr: o.Addr, Dialer: o.Dialer, TLSConfig: o.TLSConfig,
			Username: o.Username, Password: o.Password, CredentialsProvider: o.CredentialsProvider, DB: o.DB,
			DialTimeout: redisTimeout, ReadTimeout: redisTimeout, WriteTimeout: redisTimeout, PoolTimeout: redisTimeout,
			MaxRetries: -1,
		})
		l.shared = redis_rate.NewLimiter(l.client)
	}
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(l.throttled, l.fallbacks)
	}
	return l
}

// Close releases the Limiter's Redis connections.
func (l *Limiter) Close() error {
	if l.client == nil {
		return nil
	}
	return l.client.Close()
}

// Take takes one event from key's bucket if it has one.
func (l *Limiter) Take(ctx context.Context, key string, lim Limit) Decision {
	d, _ := l.decide(ctx, key, lim, 1)
	return d
}

// Peek reports whether key's bucket has an event left, taking none.
func (l *Limiter) Peek(ctx context.Context, key string, lim Limit) Decision {
	d, _ := l.decide(ctx, key, lim, 0)
	return d
}

// Throttled counts a request refused by lim for orgID ("" before
// authentication).
func (l *Limiter) Throttled(orgID string, lim Limit) {
	l.throttled.WithLabelValues(l.orgLabel(orgID), lim.Name).Inc()
}

// decide takes up to n events (at least one, unless n is 0) from key's
// bucket and reports how many it took.
func (l *Limiter) decide(ctx context.Context, key string, lim Limit, n int) (Decision, int) {
	if lim.Rate <= 0 || lim.Burst <= 0 || lim.Period <= 0 {
		return Decision{Limit: lim, Allowed: true}, n
	}
	if l.shared != nil {
		if time.Now().UnixNano() >= l.pausedUntil.Load() {
			d, taken, err := l.decideShared(ctx, key, lim, n)
			if err == nil {
				l.sharedAnswered()
				return d, taken
			}
			if ctx.Err() == nil {
				l.sharedFailed(err)
			}
		}
		l.fallbacks.Inc()
	}
	return l.decideLocally(key, lim, n)
}

func (l *Limiter) decideShared(ctx context.Context, key string, lim Limit, n int) (Decision, int, error) {
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	// AllowAtMost with n = 0 only reads the bucket: it answers "no" with
	// the wait for one event when none is left, and takes nothing.
	res, err := l.shared.AllowAtMost(ctx, l.prefix+key,
		redis_rate.Limit{Rate: lim.Rate, Period: lim.Period, Burst: lim.Burst}, n)
	if err != nil {
		return Decision{}, 0, err
	}
	d := Decision{Limit: lim, Allowed: res.RetryAfter < 0, Remaining: res.Remaining, ResetAfter: max(res.ResetAfter, 0)}
	if !d.Allowed {
		d.RetryAfter = res.RetryAfter
	}
	return d, res.Allowed, nil
}

// sharedFailed switches to per-process decisions for redisPause, logging
// once per outage.
func (l *Limiter) sharedFailed(err error) {
	l.pausedUntil.Store(time.Now().Add(redisPause).UnixNano())
	if !l.degraded.Swap(true) {
		l.log.Warn("Redis does not answer: rate limits are per process until it does", "err", err)
	}
}

func (l *Limiter) sharedAnswered() {
	if l.degraded.Swap(false) {
		l.log.Info("Redis answers again: rate limits are shared")
	}
}

func (l *Limiter) decideLocally(key string, lim Limit, n int) (Decision, int) {
	every := lim.Period / time.Duration(lim.Rate)
	l.mu.Lock()
	b, ok := l.local.Get(key)
	if !ok || b.limit != lim {
		b = &localBucket{limit: lim, Limiter: rate.NewLimiter(rate.Every(every), lim.Burst)}
		l.local.Add(key, b)
	}
	l.mu.Unlock()
	now := time.Now()
	tokens := b.TokensAt(now)
	taken := min(n, int(math.Floor(tokens)))
	d := Decision{Limit: lim}
	if tokens < 1 || (taken > 0 && !b.AllowN(now, taken)) {
		d.RetryAfter = time.Duration((1 - math.Min(tokens, 1)) * float64(every))
		d.ResetAfter = time.Duration((float64(lim.Burst) - tokens) * float64(every))
		return d, 0
	}
	tokens = b.TokensAt(now)
	d.Allowed = true
	d.Remaining = int(math.Floor(tokens))
	d.ResetAfter = time.Duration((float64(lim.Burst) - tokens) * float64(every))
	return d, taken
}
