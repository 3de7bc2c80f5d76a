// Package temporalmetrics records the Temporal SDK's client and worker
// metrics (poll and task latencies, schedule-to-start, slots, request
// failures) in a Prometheus registry, so they are scraped with the rest
// of a worker's metrics.
package temporalmetrics

import (
	"maps"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"

	"github.com/assessd/assessd/observability/promreg"
)

// labelNames are the SDK's metric tags that become labels, the same for
// every metric: Prometheus needs one label set per metric name, while the
// SDK tags each call site differently. Absent tags are empty labels, which
// Prometheus treats as missing; other tags (client_name) are dropped.
var labelNames = []string{
	"namespace", "task_queue", "worker_type", "poller_type", "workflow_type", "activity_type",
	"operation", "failure_reason", "status_code", "cause", "nexus_service", "nexus_operation",
}

// Buckets are the latency buckets of the SDK's timers, in seconds: from
// milliseconds (polls, requests) to ten minutes (schedule-to-start under a
// backlog, long activities).
var Buckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// NewHandler returns a client.MetricsHandler for client.Options that
// records into reg: counters as <name>_total, timers as <name>_seconds
// histograms, gauges as <name>. Several handlers may share one registry.
func NewHandler(reg prometheus.Registerer) client.MetricsHandler {
	return handler{vecs: &vecs{reg: reg,
		counters: map[string]*prometheus.CounterVec{},
		gauges:   map[string]*prometheus.GaugeVec{},
		timers:   map[string]*prometheus.HistogramVec{},
	}}
}

// vecs holds the collectors of one registry, created on first use.
type vecs struct {
	reg      prometheus.Registerer
	mu       sync.Mutex
	counters map[string]*prometheus.CounterVec
	gauges   map[string]*prometheus.GaugeVec
	timers   map[string]*prometheus.HistogramVec
}

// vec returns the collector named name from m, creating and registering it
// with newVec on first use.
func vec[V prometheus.Collector](v *vecs, m map[string]V, name string, newVec func() V) V {
	v.mu.Lock()
	defer v.mu.Unlock()
	c, ok := m[name]
	if !ok {
		c = promreg.Register(v.reg, newVec())
		m[name] = c
	}
	return c
}

type handler struct {
	vecs *vecs
	tags map[string]string
}

// WithTags returns a handler whose metrics also carry tags.
func (h handler) WithTags(tags map[string]string) client.MetricsHandler {
	merged := maps.Clone(h.tags)
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, tags)
	return handler{vecs: h.vecs, tags: merged}
}

func (h handler) labels() prometheus.Labels {
	l := make(prometheus.Labels, len(labelNames))
	for _, n := range labelNames {
		l[n] = h.tags[n]
	}
	return l
}

// Counter returns the counter <name>_total with the handler's tags.
func (h handler) Counter(name string) client.MetricsCounter {
	c := vec(h.vecs, h.vecs.counters, name, func() *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name + "_total", Help: "Temporal SDK counter " + name + "."}, labelNames)
	}).With(h.labels())
	return counterFunc(func(d int64) { c.Add(float64(d)) })
}

// Gauge returns the gauge name with the handler's tags.
func (h handler) Gauge(name string) client.MetricsGauge {
	g := vec(h.vecs, h.vecs.gauges, name, func() *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: "Temporal SDK gauge " + name + "."}, labelNames)
	}).With(h.labels())
	return gaugeFunc(g.Set)
}

// Timer returns the histogram <name>_seconds with the handler's tags.
func (h handler) Timer(name string) client.MetricsTimer {
	o := vec(h.vecs, h.vecs.timers, name, func() *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: name + "_seconds", Help: "Temporal SDK timer " + name + ".", Buckets: Buckets,
		}, labelNames)
	}).With(h.labels())
	return timerFunc(func(d time.Duration) { o.Observe(d.Seconds()) })
}

// counterFunc, gaugeFunc and timerFunc adapt Prometheus observations to the
// SDK's metric interfaces.
type (
	counterFunc func(int64)
	gaugeFunc   func(float64)
	timerFunc   func(time.Duration)
)

func (f counterFunc) Inc(d int64)          { f(d) }
func (f gaugeFunc) Update(v float64)       { f(v) }
func (f timerFunc) Record(d time.Duration) { f(d) }
