package lti

import (
	"errors"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/assessd/assessd/observability/promreg"
)

// Metrics are the LTI metrics of a process: logins and launches by
// organization (the process's bounded org label) and outcome, "ok" or the
// refusal's reason in lowercase, a fixed set.
type Metrics struct {
	org      func(id string) string
	logins   *prometheus.CounterVec
	launches *prometheus.CounterVec
	scores   *prometheus.CounterVec
}

// outcomeOK is the outcome label of a login or launch that succeeded.
const outcomeOK = "ok"

// NewMetrics registers the LTI metrics on reg (a nil reg leaves them
// unregistered); org maps an organization id to its bounded label value.
func NewMetrics(reg prometheus.Registerer, org func(id string) string) *Metrics {
	return &Metrics{
		org: org,
		logins: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_lti_logins_total", Help: "LTI login initiations, by organization (none when no registration matched) and outcome (ok or the refusal's reason).",
		}, []string{"org", "outcome"})),
		launches: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_lti_launches_total", Help: "LTI launches, by organization (none when it is unknown), message type (resource_link, deep_linking, other) and outcome (ok or the refusal's reason).",
		}, []string{"org", "message", "outcome"})),
		scores: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_lti_score_posts_total", Help: "Scores posted to LTI line items, by organization and outcome (ok, refused by the platform, error: retried).",
		}, []string{"org", "outcome"})),
	}
}

// outcome is the label of a refusal reason, or outcomeOK for "".
func outcome(reason string) string {
	if reason == "" {
		return outcomeOK
	}
	return strings.ToLower(reason)
}

// messageLabel bounds the message type label.
func messageLabel(t string) string {
	switch t {
	case MessageResourceLink:
		return "resource_link"
	case MessageDeepLinking:
		return "deep_linking"
	}
	return "other"
}

func (m *Metrics) login(org, reason string) {
	m.logins.WithLabelValues(m.org(org), outcome(reason)).Inc()
}

func (m *Metrics) launch(org, messageType, reason string) {
	m.launches.WithLabelValues(m.org(org), messageLabel(messageType), outcome(reason)).Inc()
}

func (m *Metrics) score(org string, err error) {
	o := outcomeOK
	switch {
	case errors.Is(err, ErrPlatformRefused):
		o = "refused"
	case err != nil:
		o = "error"
	}
	m.scores.WithLabelValues(m.org(org), o).Inc()
}
