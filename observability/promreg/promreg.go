// Package promreg registers Prometheus collectors that several components
// of one process share, such as the AI metrics of the EU and the global
// worker running side by side in the dev server.
package promreg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c on reg and returns it, or returns the collector
// already registered under the same descriptor so callers share its
// series. A nil reg leaves c unregistered. Like prometheus.MustRegister it
// panics on any other registration error: a conflicting metric of the same
// name is a programming error found at startup.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
	err := reg.Register(c)
	var exists prometheus.AlreadyRegisteredError
	if errors.As(err, &exists) {
		if shared, ok := exists.ExistingCollector.(C); ok {
			return shared
		}
	}
	if err != nil {
		panic(err) //nolint:forbidigo // prometheus.MustRegister's contract, documented above
	}
	return c
}
