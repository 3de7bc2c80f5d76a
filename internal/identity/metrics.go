package identity

import "github.com/prometheus/client_golang/prometheus"

// metrics of the provider. The org and client labels are bounded by the
// number of organizations and registered clients.
type metrics struct {
	tokensIssued *prometheus.CounterVec
	tokenErrors  *prometheus.CounterVec
	logins       *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		tokensIssued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_oauth_tokens_issued_total",
			Help: "Access tokens issued by organization, client and grant type.",
		}, []string{"org", "client", "grant_type"}),
		tokenErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_oauth_token_errors_total",
			Help: "Token endpoint errors by grant type and OAuth error code.",
		}, []string{"grant_type", "error"}),
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_logins_total",
			Help: "Login attempts on the login page by outcome (success, failure, rate_limited).",
		}, []string{"outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.tokensIssued, m.tokenErrors, m.logins)
	}
	// Every outcome exists from the start: 0, not absent, on dashboards.
	for _, outcome := range []string{"success", "failure", "rate_limited"} {
		m.logins.WithLabelValues(outcome)
	}
	return m
}
