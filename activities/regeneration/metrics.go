package regeneration

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/assessd/assessd/internal/regeneration"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/observability/promreg"
)

// Metrics are the regeneration metrics of a worker. Labels are bounded:
// the region (eu, global) and the outcome (ready, failed).
type Metrics struct {
	results  *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics registers the regeneration metrics on reg, sharing them with
// another region's worker of the same process; a nil reg leaves them
// unregistered.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	return &Metrics{
		results: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_question_regenerations_total", Help: "Question regenerations finished, by region and outcome (ready, failed).",
		}, []string{"region", "outcome"})),
		duration: promreg.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "assessd_question_regeneration_duration_seconds", Help: "Time from a regeneration's request to its outcome, by region.",
			Buckets: observability.LongBuckets,
		}, []string{"region"})),
	}
}

// finished counts a regeneration that an activity finished; one that was
// finished already (a retry) is not counted again.
func (m *Metrics) finished(region string, out regeneration.Outcome) {
	if out.Status == "" {
		return
	}
	for _, o := range []string{regeneration.StatusReady, regeneration.StatusFailed} {
		m.results.WithLabelValues(region, o)
	}
	m.results.WithLabelValues(region, out.Status).Inc()
	m.duration.WithLabelValues(region).Observe(time.Since(out.RequestedAt).Seconds())
}
