// Package activities holds what the workflows' activities share. Each
// workflow's activities live in their own package, next to the workflow:
// activities/grading for workflows/grading, activities/generation for
// workflows/generation. Activities are methods on a struct holding their
// dependencies, and act for the organization named in their input.
package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/assessd/assessd/internal/platform/repeat"
	"github.com/assessd/assessd/workflows"
)

// Heartbeat reports the running activity alive every interval until the
// returned function is called, so a worker that dies mid-call is noticed
// within the activity's heartbeat timeout.
func Heartbeat(ctx context.Context, interval time.Duration) (stop func()) {
	return repeat.Every(ctx, interval, func() { activity.RecordHeartbeat(ctx) })
}

// MaxResultBytes bounds what an activity hands back to its workflow
// (decision 0170). Temporal refuses a payload over 2 MB (its default blob
// limit) once the work is done, so an AI provider's oversized answer would
// be paid for on every retry and fail each time.
const MaxResultBytes = 1 << 20

// CheckResultSize returns a failure no retry can fix when v, encoded as
// Temporal's default converter encodes it (JSON), passes MaxResultBytes;
// what names v in the failure's message.
func CheckResultSize(what string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", what, err)
	}
	if len(data) > MaxResultBytes {
		return workflows.Permanent(fmt.Sprintf("%s: %d KiB, over the limit of %d KiB", what, len(data)>>10, MaxResultBytes>>10), nil)
	}
	return nil
}
