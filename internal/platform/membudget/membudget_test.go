package membudget_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/assessd/assessd/internal/platform/membudget"
)

// Work takes its bytes whole or waits, larger work takes the whole budget,
// and the metrics tell the size, the bytes held and the time waited.
func TestBudget(t *testing.T) {
	ctx := context.Background()
	b := membudget.New(100)
	reg := prometheus.NewRegistry()
	for range 2 { // the regions of one process register the same budget
		if err := b.Register(reg); err != nil {
			t.Fatal(err)
		}
	}
	gauge := func(name string) float64 {
		t.Helper()
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == name {
				m := f.GetMetric()[0]
				return m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
		t.Fatalf("no %s", name)
		return 0
	}
	if got := gauge("assessd_worker_memory_budget_bytes"); got != 100 {
		t.Errorf("budget %v", got)
	}

	first, err := b.Acquire(ctx, 70)
	if err != nil || first != 70 {
		t.Fatalf("took %d, %v", first, err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if n, err := b.Acquire(short, 40); err == nil || n != 0 {
		t.Fatalf("took %d of 30 left, %v", n, err)
	}
	got := make(chan int64)
	go func() {
		n, _ := b.Acquire(ctx, 1000) // more than the budget: all of it, alone
		got <- n
	}()
	time.Sleep(50 * time.Millisecond)
	if g := gauge("assessd_worker_memory_held_bytes"); g != 70 {
		t.Errorf("held %v while the large work waits, want 70", g)
	}
	b.Release(first)
	if n := <-got; n != 100 {
		t.Errorf("large work took %d, want the whole 100", n)
	}
	if g := gauge("assessd_worker_memory_held_bytes"); g != 100 {
		t.Errorf("held %v, want 100", g)
	}
	if w := gauge("assessd_worker_memory_wait_seconds_total"); w < 0.09 {
		t.Errorf("waited %v s, want at least the 0.1 s of both waits", w)
	}
	b.Release(100)
	if g := gauge("assessd_worker_memory_held_bytes"); g != 0 {
		t.Errorf("held %v after every release", g)
	}
}
