package ratelimit_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/assessd/assessd/internal/platform/ratelimit"
	"github.com/assessd/assessd/internal/testkit/redistest"
)

// prefix isolates a test's keys in the shared Redis.
func prefix(t *testing.T) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "test:" + t.Name() + ":" + hex.EncodeToString(b) + ":"
}

func redisClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c
}

// sharedRedis is the local Redis server the limiter's script is tested
// against; -short mode, which runs without one, uses an in-process Redis.
func sharedRedis(t *testing.T) *redis.Client {
	if testing.Short() {
		return redistest.Client(t)
	}
	return redisClient(t, "127.0.0.1:6379")
}

func newLimiter(t *testing.T, opts ratelimit.Options) *ratelimit.Limiter {
	l := ratelimit.New(opts)
	t.Cleanup(func() { l.Close() })
	return l
}

// TestSharedAcrossInstances runs two limiters, as two server instances
// would, on one Redis: they draw from the same bucket.
func TestSharedAcrossInstances(t *testing.T) {
	rdb := sharedRedis(t)
	p := prefix(t)
	a := newLimiter(t, ratelimit.Options{Redis: rdb, Prefix: p})
	b := newLimiter(t, ratelimit.Options{Redis: rdb, Prefix: p})
	lim := ratelimit.PerWindow("default", 3, time.Minute)
	ctx := context.Background()
	for i, l := range []*ratelimit.Limiter{a, b, a} {
		d := l.Take(ctx, "org_1", lim)
		if !d.Allowed || d.Remaining != 2-i {
			t.Fatalf("take %d: %+v", i, d)
		}
	}
	d := b.Take(ctx, "org_1", lim)
	if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > 20*time.Second {
		t.Fatalf("fourth take: %+v", d)
	}
	if d := a.Peek(ctx, "org_1", lim); d.Allowed {
		t.Fatalf("peek after exhaustion: %+v", d)
	}
	if d := a.Take(ctx, "org_2", lim); !d.Allowed {
		t.Fatalf("another key shares the bucket: %+v", d)
	}
	keys, err := rdb.Keys(ctx, "rate:"+p+"*").Result()
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys in Redis: %v, %v", keys, err)
	}
}

func TestPeekTakesNothing(t *testing.T) {
	for name, opts := range map[string]ratelimit.Options{
		"redis": {Redis: sharedRedis(t), Prefix: prefix(t)},
		"local": {},
	} {
		t.Run(name, func(t *testing.T) {
			l := newLimiter(t, opts)
			lim := ratelimit.PerWindow("x", 2, time.Minute)
			ctx := context.Background()
			for range 5 {
				if d := l.Peek(ctx, "k", lim); !d.Allowed {
					t.Fatalf("peek refused a full bucket: %+v", d)
				}
			}
			l.Take(ctx, "k", lim)
			l.Take(ctx, "k", lim)
			if d := l.Peek(ctx, "k", lim); d.Allowed || d.RetryAfter <= 0 {
				t.Fatalf("peek of an empty bucket: %+v", d)
			}
		})
	}
}

// TestFailuresPerAddressAndCredential: failures with one credential from
// an address block that pair only.
func TestFailuresPerAddressAndCredential(t *testing.T) {
	reg := prometheus.NewRegistry()
	l := newLimiter(t, ratelimit.Options{Redis: sharedRedis(t), Prefix: prefix(t), Registerer: reg})
	f := l.Failures("login", 3, 1)
	ctx := context.Background()
	for range 3 {
		f.Fail(ctx, "10.0.0.1", "victim@a.test")
	}
	if blocked, retry := f.Blocked(ctx, "10.0.0.1", "victim@a.test"); !blocked || retry <= 0 {
		t.Fatalf("after 3 failures: blocked %v, retry %v", blocked, retry)
	}
	if blocked, _ := f.Blocked(ctx, "10.0.0.1", "other@b.test"); blocked {
		t.Fatal("another credential from the same address is blocked")
	}
	if blocked, _ := f.Blocked(ctx, "10.0.0.2", "victim@a.test"); blocked {
		t.Fatal("the same credential from another address is blocked")
	}
	want := `# HELP assessd_rate_limited_requests_total Requests refused with 429, by organization (_none before authentication) and limit.
# TYPE assessd_rate_limited_requests_total counter
assessd_rate_limited_requests_total{limit="login",org=""} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "assessd_rate_limited_requests_total"); err != nil {
		t.Fatal(err)
	}
}

// TestRedisDown points the limiter at a closed port: decisions are taken
// per process with the same limits, counted, and logged once.
func TestRedisDown(t *testing.T) {
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	l := newLimiter(t, ratelimit.Options{
		Redis: redisClient(t, "127.0.0.1:1"), Prefix: prefix(t), Registerer: reg,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	lim := ratelimit.PerWindow("default", 5, time.Minute)
	ctx := context.Background()
	start := time.Now()
	allowed := 0
	for range 8 {
		if l.Take(ctx, "org_1", lim).Allowed {
			allowed++
		}
	}
	if allowed != 5 {
		t.Fatalf("allowed %d of 8 with a quota of 5", allowed)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Fatalf("8 decisions took %v with Redis down", elapsed)
	}
	if n := strings.Count(logs.String(), "Redis does not answer"); n != 1 {
		t.Fatalf("logged the outage %d times:\n%s", n, logs.String())
	}
	want := `# HELP assessd_rate_limit_local_decisions_total Rate-limit decisions taken per process because Redis did not answer.
# TYPE assessd_rate_limit_local_decisions_total counter
assessd_rate_limit_local_decisions_total 8
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "assessd_rate_limit_local_decisions_total"); err != nil {
		t.Fatal(err)
	}
}

func TestSetHeaders(t *testing.T) {
	l := newLimiter(t, ratelimit.Options{})
	lim := ratelimit.PerWindow("pro", 2, time.Minute)
	ctx := context.Background()
	h := http.Header{}
	l.Take(ctx, "o", lim).SetHeaders(h)
	if got := h.Get("RateLimit-Policy"); got != `"pro";q=2;w=60` {
		t.Errorf("RateLimit-Policy = %q", got)
	}
	if got := h.Get("RateLimit"); got != `"pro";r=1;t=30` {
		t.Errorf("RateLimit = %q", got)
	}
	if h.Get("Retry-After") != "" {
		t.Error("Retry-After on an allowed request")
	}
	l.Take(ctx, "o", lim)
	h = http.Header{}
	l.Take(ctx, "o", lim).SetHeaders(h)
	if got := h.Get("Retry-After"); got != "30" || !strings.Contains(h.Get("RateLimit"), "r=0;") {
		t.Errorf("refused: Retry-After %q, RateLimit %q", got, h.Get("RateLimit"))
	}
}

// countingRedis is a client on the local Redis whose connections count
// the limit scripts run through them: one per round trip.
func countingRedis(t *testing.T, scripts *atomic.Int64) *redis.Client {
	var d net.Dialer
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379",
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := d.DialContext(ctx, network, addr)
			return countingConn{conn, scripts}, err
		}})
	t.Cleanup(func() { c.Close() })
	return c
}

type countingConn struct {
	net.Conn
	scripts *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	if bytes.Contains(bytes.ToLower(b), []byte("evalsha")) {
		c.scripts.Add(1)
	}
	return c.Conn.Write(b)
}

// TestQuotaLeases: a busy organization's tokens are leased several per
// round trip, and two instances together never admit more than the quota.
func TestQuotaLeases(t *testing.T) {
	if testing.Short() {
		t.Skip("counts round trips to the local Redis server")
	}
	var scripts atomic.Int64
	p := prefix(t)
	lim := ratelimit.PerWindow("pro", 1000, time.Hour)
	policy := func(context.Context, string) (ratelimit.Limit, error) { return lim, nil }
	a := newLimiter(t, ratelimit.Options{Redis: countingRedis(t, &scripts), Prefix: p}).Quotas(policy, lim, 0)
	b := newLimiter(t, ratelimit.Options{Redis: countingRedis(t, &scripts), Prefix: p}).Quotas(policy, lim, 0)
	ctx := context.Background()
	for i := range 500 {
		if d := a.Take(ctx, "org_1"); !d.Allowed || d.Remaining > 1000-1-i {
			t.Fatalf("take %d: %+v", i, d)
		}
	}
	// 1, 2, 4, 8 and then leases of ten (a hundredth of the burst).
	if n := scripts.Load(); n > 4+500/10 {
		t.Fatalf("%d round trips for 500 requests", n)
	}
	// Both instances, four clients each, concurrently.
	var allowed atomic.Int64
	allowed.Store(500)
	var wg sync.WaitGroup
	for range 4 {
		for _, q := range []*ratelimit.Quotas{a, b} {
			wg.Go(func() {
				for range 250 {
					if q.Take(ctx, "org_1").Allowed {
						allowed.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	// Each instance may hold up to nine tokens it could not spend.
	if n := allowed.Load(); n > 1000 || n < 1000-2*9 {
		t.Fatalf("admitted %d with a quota of 1000", n)
	}
	d := b.Take(ctx, "org_1")
	if d.Allowed || d.RetryAfter <= 0 || !strings.Contains(headers(d).Get("RateLimit"), "r=0;") {
		t.Fatalf("over quota: %+v", d)
	}
}

// TestSmallQuotasAreExact: a quota under 200 leases one token at a time,
// so the headers count every request.
func TestSmallQuotasAreExact(t *testing.T) {
	lim := ratelimit.PerWindow("free", 3, time.Minute)
	q := newLimiter(t, ratelimit.Options{Redis: sharedRedis(t), Prefix: prefix(t)}).
		Quotas(func(context.Context, string) (ratelimit.Limit, error) { return lim, nil }, lim, 0)
	ctx := context.Background()
	for i := range 3 {
		if got := headers(q.Take(ctx, "o")).Get("RateLimit"); !strings.HasPrefix(got, `"free";r=`+strconv.Itoa(2-i)+";") {
			t.Fatalf("take %d: RateLimit %q", i, got)
		}
	}
	if d := q.Take(ctx, "o"); d.Allowed {
		t.Fatalf("fourth take: %+v", d)
	}
}

func headers(d ratelimit.Decision) http.Header {
	h := http.Header{}
	d.SetHeaders(h)
	return h
}

// TestFailuresRememberClearPairs: a pair found clear is not looked up
// again for a second; its own failures here forget that at once, failures
// on another instance once the second has passed.
func TestFailuresRememberClearPairs(t *testing.T) {
	if testing.Short() {
		t.Skip("counts round trips to the local Redis server")
	}
	var scripts atomic.Int64
	p := prefix(t)
	a := newLimiter(t, ratelimit.Options{Redis: countingRedis(t, &scripts), Prefix: p}).Failures("api", 3, 1)
	b := newLimiter(t, ratelimit.Options{Redis: sharedRedis(t), Prefix: p}).Failures("api", 3, 1)
	ctx := context.Background()
	for range 100 {
		if blocked, _ := a.Blocked(ctx, "10.0.0.1", "key_1"); blocked {
			t.Fatal("a clear pair is blocked")
		}
	}
	if n := scripts.Load(); n != 1 {
		t.Fatalf("%d round trips for 100 checks of a clear pair", n)
	}
	for range 3 {
		b.Fail(ctx, "10.0.0.1", "key_1")
	}
	if blocked, _ := a.Blocked(ctx, "10.0.0.1", "key_1"); blocked {
		t.Fatal("remembered as clear: the other instance's failures are not seen yet")
	}
	a.Fail(ctx, "10.0.0.1", "key_1")
	if blocked, _ := a.Blocked(ctx, "10.0.0.1", "key_1"); !blocked {
		t.Fatal("not blocked after failing here")
	}

	// Another pair blocked elsewhere is seen once the second has passed.
	if blocked, _ := a.Blocked(ctx, "10.0.0.2", "key_1"); blocked {
		t.Fatal("a clear pair is blocked")
	}
	for range 3 {
		b.Fail(ctx, "10.0.0.2", "key_1")
	}
	time.Sleep(1100 * time.Millisecond)
	if blocked, _ := a.Blocked(ctx, "10.0.0.2", "key_1"); !blocked {
		t.Fatal("not blocked a second after the other instance's failures")
	}
}
