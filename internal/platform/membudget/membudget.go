// Package membudget bounds the bytes that the work sharing a budget holds
// in memory at once: work waits for its bytes before it fetches or decodes
// anything large, instead of every task of a busy worker holding its own.
package membudget

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
)

// Budget is a number of bytes handed out to work and given back by it.
type Budget struct {
	sem    *semaphore.Weighted
	size   int64
	held   atomic.Int64
	waited atomic.Int64 // nanoseconds spent waiting for bytes
}

// New returns a budget of size bytes.
func New(size int64) *Budget {
	return &Budget{sem: semaphore.NewWeighted(size), size: size}
}

// DefaultWorkerBytes is the size of a worker process's budget unless
// configured (ASSESSD_WORKER_MEMORY_BYTES).
const DefaultWorkerBytes = 256 << 20

// Worker is the budget of a worker process (decision 0174) that is given
// none: the answer files a grading sends its provider, the scan file
// being split and the page images being read. The memory it guards is the
// process's, shared by the regions a process serves.
var Worker = New(DefaultWorkerBytes)

// Size is the budget's whole size.
func (b *Budget) Size() int64 { return b.size }

// Acquire waits until n bytes are free and takes them, or until ctx ends.
// Work needing more than the whole budget takes all of it and runs alone.
// It returns the bytes taken, for Release.
func (b *Budget) Acquire(ctx context.Context, n int64) (int64, error) {
	n = min(max(n, 0), b.size)
	if !b.sem.TryAcquire(n) {
		start := time.Now()
		err := b.sem.Acquire(ctx, n)
		b.waited.Add(int64(time.Since(start)))
		if err != nil {
			return 0, err
		}
	}
	b.held.Add(n)
	return n, nil
}

// Release gives back n of the bytes taken.
func (b *Budget) Release(n int64) {
	b.held.Add(-n)
	b.sem.Release(n)
}

// Register adds the budget's size, the bytes held and the time spent
// waiting to reg as assessd_worker_memory_*. A budget registered already
// (the regions of one process share theirs) is left as it is.
func (b *Budget) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "assessd_worker_memory_budget_bytes",
			Help: "Bytes of answer files, scan files and decoded pages the worker may hold at once (ASSESSD_WORKER_MEMORY_BYTES)."},
			func() float64 { return float64(b.size) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "assessd_worker_memory_held_bytes",
			Help: "Bytes of the worker's memory budget held by running work."},
			func() float64 { return float64(b.held.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "assessd_worker_memory_wait_seconds_total",
			Help: "Time work spent waiting for bytes of the worker's memory budget, summed over the work."},
			func() float64 { return time.Duration(b.waited.Load()).Seconds() }),
	} {
		if err := reg.Register(c); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
			return err
		}
	}
	return nil
}
