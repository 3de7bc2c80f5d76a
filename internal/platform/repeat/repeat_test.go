package repeat

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestEvery: fn runs on every tick, and not once stop has returned, nor
// after ctx ends.
func TestEvery(t *testing.T) {
	var calls atomic.Int32
	stop := Every(context.Background(), time.Millisecond, func() { calls.Add(1) })
	for deadline := time.Now().Add(5 * time.Second); calls.Load() < 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls in 5 s", calls.Load())
		}
	}
	stop()
	after := calls.Load()
	time.Sleep(20 * time.Millisecond)
	if n := calls.Load(); n != after {
		t.Fatalf("%d calls after stop returned", n-after)
	}

	ctx, cancel := context.WithCancel(context.Background())
	calls.Store(0)
	stop = Every(ctx, time.Millisecond, func() { calls.Add(1) })
	cancel()
	time.Sleep(20 * time.Millisecond)
	ended := calls.Load()
	time.Sleep(20 * time.Millisecond)
	if n := calls.Load(); n != ended {
		t.Fatalf("%d calls after ctx ended", n-ended)
	}
	stop() // still returns
}
