// Package workflows holds what assessd's durable Temporal workflows share:
// the task queue of each AI region, the failure conventions of their
// activities, and the one starter, the outbox Dispatcher (decision 0045).
// Each workflow lives in its own package, next to its activities:
// workflows/grading with activities/grading, workflows/generation with
// activities/generation.
package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
)

// ErrUnknownRegion is the error of a region that has no task queue: work is
// never routed to another region's queue by default.
var ErrUnknownRegion = errors.New("unknown AI region")

// RegionTaskQueue returns the task queue of an AI region (an organization's
// aiRegion): all of the region's workflows, grading and generation, run
// there, and a worker polls only its region's queue, so EU work never
// reaches a global worker. The names keep their historical "grading-"
// prefix so that deployed workers and running workflows keep their queue.
func RegionTaskQueue(region string) (string, error) {
	switch region {
	case "eu", "global":
		return "grading-" + region, nil
	}
	return "", fmt.Errorf("%w %q: want eu or global", ErrUnknownRegion, region)
}

// ErrTypeInvalidRequest is the application error type of activity failures
// retrying cannot fix (the AI provider refused the request, the subject can
// never be processed); the workflows' retry policies do not retry it.
const ErrTypeInvalidRequest = "InvalidRequest"

// RetryPolicy is the retry policy of the workflows' activities: backoff
// doubling from one second up to a minute, at most maxAttempts attempts,
// and never a retry of ErrTypeInvalidRequest.
func RetryPolicy(maxAttempts int32) *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval:        time.Second,
		BackoffCoefficient:     2,
		MaximumInterval:        time.Minute,
		MaximumAttempts:        maxAttempts,
		NonRetryableErrorTypes: []string{ErrTypeInvalidRequest},
	}
}

// Permanent wraps err, whose message is safe to show to clients, as a
// failure no retry can fix.
func Permanent(message string, err error) error {
	return temporal.NewNonRetryableApplicationError(message, ErrTypeInvalidRequest, err)
}

// FailureReason is the client-safe text of an activity failure: the message
// of an application error, or a generic reason for anything else.
func FailureReason(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	return "the AI provider failed after retries"
}
