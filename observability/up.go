package observability

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// RegisterCredentialListener exports up as assessd_credential_listener_up:
// 1 while the instance listens for credential changes (revocations reach
// it within a second), 0 while it is reconnecting and bypasses its
// credential cache.
func (m *Metrics) RegisterCredentialListener(up func() bool) {
	m.registerUp("assessd_credential_listener_up", "1 while the credential change listener is connected, 0 while it reconnects.", up)
}

// redisPingTimeout bounds the scrape's Redis check: a Redis that takes
// longer is as good as down for the requests that wait on it.
const redisPingTimeout = 500 * time.Millisecond

// RegisterRedis exports assessd_redis_up: 1 when ping answers within half
// a second at scrape time, 0 otherwise. The instance keeps serving
// without Redis (readiness leaves it out), but embed sessions answer 503
// and rate limits hold per process, not across instances.
func (m *Metrics) RegisterRedis(ping func(context.Context) error) {
	m.registerUp("assessd_redis_up", "1 when Redis answered a PING within 500 ms at scrape time, 0 otherwise.", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), redisPingTimeout)
		defer cancel()
		return ping(ctx) == nil
	})
}

func (m *Metrics) registerUp(name, help string, up func() bool) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
		if up() {
			return 1
		}
		return 0
	}))
}
