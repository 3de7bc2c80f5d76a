package observability

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// PoolStats is what the pgx pool collector reads; *store.DB provides it.
type PoolStats interface {
	Stat() *pgxpool.Stat
}

// poolCollector exports pgx pool statistics at scrape time.
type poolCollector struct {
	pool  PoolStats
	descs map[string]*prometheus.Desc
}

// RegisterPool exports the statistics of pool as assessd_db_pool_* metrics.
func (m *Metrics) RegisterPool(pool PoolStats) {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("assessd_db_pool_"+name, help, nil, nil)
	}
	m.Registry.MustRegister(&poolCollector{pool: pool, descs: map[string]*prometheus.Desc{
		"acquired":     d("acquired_connections", "Connections currently in use."),
		"idle":         d("idle_connections", "Idle connections."),
		"total":        d("total_connections", "Open connections."),
		"max":          d("max_connections", "Maximum pool size."),
		"acquires":     d("acquires_total", "Successful connection acquisitions."),
		"empty":        d("empty_acquires_total", "Acquisitions that waited for a connection."),
		"canceled":     d("canceled_acquires_total", "Acquisitions canceled by their context."),
		"acquire_secs": d("acquire_duration_seconds_total", "Time spent acquiring connections."),
	}})
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	g := func(k string, v float64) { ch <- prometheus.MustNewConstMetric(c.descs[k], prometheus.GaugeValue, v) }
	n := func(k string, v float64) { ch <- prometheus.MustNewConstMetric(c.descs[k], prometheus.CounterValue, v) }
	g("acquired", float64(s.AcquiredConns()))
	g("idle", float64(s.IdleConns()))
	g("total", float64(s.TotalConns()))
	g("max", float64(s.MaxConns()))
	n("acquires", float64(s.AcquireCount()))
	n("empty", float64(s.EmptyAcquireCount()))
	n("canceled", float64(s.CanceledAcquireCount()))
	n("acquire_secs", s.AcquireDuration().Seconds())
}
