package generation

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/assessd/assessd/internal/generation"
	"github.com/assessd/assessd/observability/promreg"
)

// Metrics are the exam generation metrics of a worker. Labels are bounded:
// the organization (by orgLabel), the region (eu, global) and the outcome
// (ready, failed).
type Metrics struct {
	results  *prometheus.CounterVec
	orgLabel func(string) string
}

// NewMetrics registers the generation metrics on reg, sharing them with
// another region's worker of the same process; a nil reg leaves them
// unregistered. orgLabel bounds the org label's cardinality.
func NewMetrics(reg prometheus.Registerer, orgLabel func(string) string) *Metrics {
	return &Metrics{
		orgLabel: orgLabel,
		results: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_exam_generations_total", Help: "Exam generations finished, by organization, region and outcome (ready, failed).",
		}, []string{"org", "region", "outcome"})),
	}
}

// finished counts a generation that an activity finished with status; ""
// (finished already, a retry) is not counted again.
func (m *Metrics) finished(orgID, region, status string) {
	if status == "" {
		return
	}
	org := m.orgLabel(orgID)
	// Both outcomes of an organization exist from its first generation,
	// so its failure ratio is 0, not absent, while nothing failed.
	for _, o := range []string{generation.StatusReady, generation.StatusFailed} {
		m.results.WithLabelValues(org, region, o)
	}
	m.results.WithLabelValues(org, region, status).Inc()
}
