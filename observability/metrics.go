package observability

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// MaxOrgLabels bounds the org label's cardinality: the first MaxOrgLabels
// organizations seen get their own series, later ones share OverflowOrg.
const MaxOrgLabels = 1000

// OverflowOrg is the org label once MaxOrgLabels is reached; NoOrg labels
// unauthenticated requests.
const (
	OverflowOrg = "_other"
	NoOrg       = "_none"
)

// Metrics is the process's metric registry and the HTTP metrics.
type Metrics struct {
	Registry     *prometheus.Registry
	HTTPRequests *prometheus.CounterVec
	HTTPDuration *prometheus.HistogramVec
	AuthFailures *prometheus.CounterVec
	orgs         OrgLabeler
}

// NewMetrics registers the Go runtime, process and HTTP metrics on a fresh
// registry.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		Registry: reg,
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_http_requests_total",
			Help: "HTTP requests by organization, route template, method and status class.",
		}, []string{"org", "route", "method", "status"}),
		// No org label: a histogram has a series per bucket, and per
		// organization that multiplies into the hundreds of thousands.
		// Per-tenant traffic and errors come from HTTPRequests.
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "assessd_http_request_duration_seconds",
			Help:    "HTTP request latency by route template, method and status class.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method", "status"}),
		AuthFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_auth_failures_total",
			Help: "Rejected API credentials by reason.",
		}, []string{"reason"}),
	}
	reg.MustRegister(m.HTTPRequests, m.HTTPDuration, m.AuthFailures)
	// Every reason exists from the start, so ratios and rates are 0
	// rather than absent before the first failure.
	for _, reason := range AuthFailureReasons {
		m.AuthFailures.WithLabelValues(reason)
	}
	return m
}

// LongBuckets are latency buckets in seconds for work that takes from a
// fraction of a second to half an hour, such as grading a result.
var LongBuckets = []float64{.1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120, 180, 300, 450, 600, 900, 1200, 1800}

// AuthFailureReasons are the reason label values of
// assessd_auth_failures_total.
var AuthFailureReasons = []string{"missing", "malformed", "invalid", "rate_limited"}

// Org returns the org label value for id, bounded by MaxOrgLabels.
func (m *Metrics) Org(id string) string { return m.orgs.Label(id) }

// OrgLabeler maps organization ids to label values with bounded
// cardinality. The zero value is ready to use.
type OrgLabeler struct {
	mu   sync.RWMutex
	seen map[string]struct{}
}

// Seen returns the organization ids that have their own label.
func (l *OrgLabeler) Seen() []string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	ids := make([]string, 0, len(l.seen))
	for id := range l.seen {
		ids = append(ids, id)
	}
	return ids
}

// Label returns id while fewer than MaxOrgLabels distinct ids were seen,
// OverflowOrg afterwards, and NoOrg for "".
func (l *OrgLabeler) Label(id string) string {
	if id == "" {
		return NoOrg
	}
	l.mu.RLock()
	_, ok := l.seen[id]
	l.mu.RUnlock()
	if ok {
		return id
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = make(map[string]struct{})
	}
	if _, ok := l.seen[id]; ok {
		return id
	}
	if len(l.seen) >= MaxOrgLabels {
		return OverflowOrg
	}
	l.seen[id] = struct{}{}
	return id
}
