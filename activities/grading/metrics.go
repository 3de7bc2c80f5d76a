package grading

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/assessd/assessd/observability"
)

// Metrics are the grading metrics of a worker.
type Metrics struct {
	results  *prometheus.CounterVec
	duration *prometheus.HistogramVec
	files    *prometheus.CounterVec
	orgLabel func(string) string
}

// NewMetrics registers the grading metrics on reg; orgLabel bounds the org
// label's cardinality.
func NewMetrics(reg prometheus.Registerer, orgLabel func(string) string) *Metrics {
	m := &Metrics{
		results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_grading_results_total", Help: "Results finished by organization, region and outcome.",
		}, []string{"org", "region", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "assessd_grading_duration_seconds", Help: "Time from a result's submission to the end of its grading, by region.",
			Buckets: observability.LongBuckets,
		}, []string{"region"}),
		files: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_grading_files_total", Help: "Grading file inputs fetched or skipped, by organization, region and outcome.",
		}, []string{"org", "region", "outcome"}),
		orgLabel: orgLabel,
	}
	reg.MustRegister(m.results, m.duration, m.files)
	return m
}

func (m *Metrics) fileSkipped(orgID, region, reason string) {
	m.files.WithLabelValues(m.orgLabel(orgID), region, "skipped: "+reason).Inc()
}

func (m *Metrics) fileFetched(orgID, region string) {
	m.files.WithLabelValues(m.orgLabel(orgID), region, "fetched").Inc()
}

// answerGraded creates the organization's fetched-files series at zero
// when it has an answer graded, so its dashboards show 0 rather than
// nothing before its first file.
func (m *Metrics) answerGraded(orgID, region string) {
	m.files.WithLabelValues(m.orgLabel(orgID), region, "fetched")
}

func (m *Metrics) finished(orgID, region, outcome string, d time.Duration) {
	org := m.orgLabel(orgID)
	// Both outcomes of an organization exist from its first result, so
	// its failure ratio is 0, not absent, while nothing failed.
	for _, o := range []string{"graded", "failed"} {
		m.results.WithLabelValues(org, region, o)
	}
	m.results.WithLabelValues(org, region, outcome).Inc()
	m.duration.WithLabelValues(region).Observe(d.Seconds())
}
