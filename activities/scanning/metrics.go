package scanning

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/assessd/assessd/internal/scanning"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/observability/promreg"
)

// Metrics are the scanning metrics of a worker.
type Metrics struct {
	scans    *prometheus.CounterVec
	pages    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	orgLabel func(string) string
}

// NewMetrics registers the scanning metrics on reg (nil: unregistered);
// orgLabel bounds the org label's cardinality. Several workers of one
// process share the collectors.
func NewMetrics(reg prometheus.Registerer, orgLabel func(string) string) *Metrics {
	return &Metrics{
		scans: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_scanning_scans_total", Help: "Answer-sheet scans finished by organization, region and outcome (completed, failed).",
		}, []string{"org", "region", "outcome"})),
		pages: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_scanning_pages_total", Help: "Answer-sheet pages read by organization, region and outcome (read, or the page's error code in lower case).",
		}, []string{"org", "region", "outcome"})),
		duration: promreg.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "assessd_scanning_page_duration_seconds", Help: "Time to read one answer-sheet page, vision model included, by region.",
			Buckets: observability.LongBuckets,
		}, []string{"region"})),
		orgLabel: orgLabel,
	}
}

// page counts a page read; reason is its error code, "" when it was read.
func (m *Metrics) page(orgID, region, reason string, d time.Duration) {
	outcome := "read"
	if reason != "" {
		outcome = strings.ToLower(reason) // one of the activities' bounded codes
	}
	m.pages.WithLabelValues(m.orgLabel(orgID), region, outcome).Inc()
	m.duration.WithLabelValues(region).Observe(d.Seconds())
}

func (m *Metrics) finished(orgID, region, outcome string) {
	org := m.orgLabel(orgID)
	// Both outcomes of an organization exist from its first scan, so its
	// failure ratio is 0, not absent, while nothing failed.
	for _, o := range []string{scanning.StatusCompleted, scanning.StatusFailed} {
		m.scans.WithLabelValues(org, region, o)
	}
	m.scans.WithLabelValues(org, region, outcome).Inc()
}
