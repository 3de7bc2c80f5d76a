// Package activities holds what the workflows' activities share. Each
// workflow's activities live in their own package, next to the workflow:
// activities/grading for workflows/grading, activities/generation for
// workflows/generation. Activities are methods on a struct holding their
// dependencies, and act for the organization named in their input.
package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
)

// Heartbeat reports the running activity alive every interval until the
// returned function is called, so a worker that dies mid-call is noticed
// within the activity's heartbeat timeout.
func Heartbeat(ctx context.Context, interval time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}
