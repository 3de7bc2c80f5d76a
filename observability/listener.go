package observability

import "github.com/prometheus/client_golang/prometheus"

// RegisterCredentialListener exports up as assessd_credential_listener_up:
// 1 while the instance listens for credential changes (revocations reach
// it within a second), 0 while it is reconnecting and bypasses its
// credential cache.
func (m *Metrics) RegisterCredentialListener(up func() bool) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "assessd_credential_listener_up",
		Help: "1 while the credential change listener is connected, 0 while it reconnects.",
	}, func() float64 {
		if up() {
			return 1
		}
		return 0
	}))
}
