package delivery

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/assessd/assessd/observability/promreg"
)

// Metrics are the delivery metrics of a process. Labels are bounded: the
// organization through the process's org labeler, and small fixed sets.
type Metrics struct {
	org      func(id string) string
	started  *prometheus.CounterVec
	saves    *prometheus.CounterVec
	finished *prometheus.CounterVec
	saveTime prometheus.Histogram
}

// Save outcomes, the outcome label of assessd_attempt_saves_total.
const (
	saveOK       = "saved"
	saveClosed   = "closed"   // after deadline + grace, or once submitted
	saveRefused  = "refused"  // bad input, a stale expected revision
	saveNotFound = "notfound" // no such attempt of the caller
)

// NewMetrics registers the delivery metrics on reg (a nil reg leaves them
// unregistered); org maps an organization id to its bounded label value.
func NewMetrics(reg prometheus.Registerer, org func(id string) string) *Metrics {
	return &Metrics{
		org: org,
		started: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_attempts_started_total", Help: "Attempts started, by organization.",
		}, []string{"org"})),
		saves: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_attempt_saves_total", Help: "Saves of an attempt's response, by organization and outcome (saved, closed, refused, notfound).",
		}, []string{"org", "outcome"})),
		finished: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_attempts_finished_total", Help: "Attempts submitted or discarded, by organization, status (submitted, discarded) and who closed it (student, staff, system: the deadline).",
		}, []string{"org", "status", "by"})),
		saveTime: promreg.Register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "assessd_attempt_save_duration_seconds", Help: "Time to commit a save of an attempt's response, from the request's arrival in the service.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		})),
	}
}

func (m *Metrics) attemptStarted(org string) {
	if m != nil {
		m.started.WithLabelValues(m.org(org)).Inc()
	}
}

func (m *Metrics) saved(org, outcome string, since time.Time) {
	if m == nil {
		return
	}
	m.saves.WithLabelValues(m.org(org), outcome).Inc()
	if outcome == saveOK {
		m.saveTime.Observe(time.Since(since).Seconds())
	}
}

func (m *Metrics) attemptFinished(org, status, by string) {
	if m != nil {
		m.finished.WithLabelValues(m.org(org), status, by).Inc()
	}
}
