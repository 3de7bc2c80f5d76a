// Package membudget bounds the bytes that the work sharing a budget holds
// in memory at once: work waits for its bytes before it fetches or decodes
// anything large, instead of every task of a busy worker holding its own.
package membudget

import (
	"context"

	"golang.org/x/sync/semaphore"
)

// Budget is a number of bytes handed out to work and given back by it.
type Budget struct {
	held *semaphore.Weighted
	size int64
}

// New returns a budget of size bytes.
func New(size int64) *Budget {
	return &Budget{held: semaphore.NewWeighted(size), size: size}
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
	if err := b.held.Acquire(ctx, n); err != nil {
		return 0, err
	}
	return n, nil
}

// Release gives back n of the bytes taken.
func (b *Budget) Release(n int64) { b.held.Release(n) }
