package promreg_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/assessd/assessd/observability/promreg"
)

func newCounter(labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "test_total", Help: "Test."}, labels)
}

func TestRegisterSharesExistingCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	first := promreg.Register(reg, newCounter("a"))
	second := promreg.Register(reg, newCounter("a"))
	if first != second {
		t.Fatal("a second registration got its own collector")
	}
	if promreg.Register(nil, newCounter("a")) == nil {
		t.Fatal("nil registerer returned no collector")
	}
}

func TestRegisterPanicsOnConflict(t *testing.T) {
	reg := prometheus.NewRegistry()
	promreg.Register(reg, newCounter("a"))
	defer func() {
		if recover() == nil {
			t.Fatal("a conflicting metric of the same name was accepted")
		}
	}()
	promreg.Register(reg, newCounter("b"))
}
