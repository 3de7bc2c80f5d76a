// Package repeat calls a function on a ticker in the background: an
// activity's heartbeat, a running request's lease.
package repeat

import (
	"context"
	"time"
)

// Every calls fn every interval until stop is called or ctx ends. stop
// returns once fn is not running, and is called once.
func Every(ctx context.Context, interval time.Duration, fn func()) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				fn()
			}
		}
	}()
	return func() { close(done); <-stopped }
}
