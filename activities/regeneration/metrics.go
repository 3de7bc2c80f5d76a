package regeneration

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/assessd/assessd/internal/regeneration"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/observability/promreg"
)

// Metrics are the regeneration metrics of a worker. Labels are bounded:
// the organization (by orgLabel), the region (eu, global) and the outcome
// (ready, failed); the histogram has no org label.
type Metrics struct {
	results  *prometheus.CounterVec
	duration *prometheus.HistogramVec
	orgLabel func(string) string
}

// NewMetrics registers the regeneration metrics on reg, sharing them with
// another region's worker of the same process; a nil reg leaves them
// unregistered. orgLabel bounds the org label's cardinality.
func NewMetrics(reg prometheus.Registerer, orgLabel func(string) string) *Metrics {
	return &Metrics{
		orgLabel: orgLabel,
		results: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_question_regenerations_total", Help: "Question regenerations finished, by organization, region and outcome (ready, failed).",
		}, []string{"org", "region", "outcome"})),
		duration: promreg.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "assessd_question_regeneration_duration_seconds", Help: "Time from a regeneration's request to its outcome, by region.",
			Buckets: observability.LongBuckets,
		}, []string{"region"})),
	}
}

// finished counts a regeneration that an activity finished; one that was
// finished already (a retry) is not counted again.
func (m *Metrics) finished(orgID, region string, out regeneration.Outcome) {
	if out.Status == "" {
		return
	}
	org := m.orgLabel(orgID)
	// Both outcomes of an organization exist from its first regeneration,
	// so its failure ratio is 0, not absent, while nothing failed.
	for _, o := range []string{regeneration.StatusReady, regeneration.StatusFailed} {
		m.results.WithLabelValues(org, region, o)
	}
	m.results.WithLabelValues(org, region, out.Status).Inc()
	m.duration.WithLabelValues(region).Observe(time.Since(out.RequestedAt).Seconds())
}
