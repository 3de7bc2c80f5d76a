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
	"go.temporal.io/sdk/workflow"

	"github.com/assessd/assessd/internal/platform/errs"
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

// Permanent wraps err, whose message is safe to show to clients, as a
// failure no retry can fix.
func Permanent(message string, err error) error {
	return temporal.NewNonRetryableApplicationError(message, ErrTypeInvalidRequest, err)
}

// PermanentIfGone makes a not-found error (the subject was deleted while
// its workflow ran: with its exam, its question or its student) a failure
// no retry can fix, saying what was deleted; other errors pass unchanged.
func PermanentIfGone(err error, what string) error {
	if errs.Is(err, errs.KindNotFound) {
		return Permanent(what+" was deleted", nil)
	}
	return err
}

// IsPermanent reports whether an activity's failure is one that no retry
// can fix.
func IsPermanent(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && (app.NonRetryable() || app.Type() == ErrTypeInvalidRequest)
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

// AIActivityOptions are the options of activities that call a region's AI
// provider: transient failures are retried with exponential backoff up to
// attempts times, a failure marked Permanent never is. They heartbeat while
// they wait for the provider, so a worker that dies mid-call is noticed
// within heartbeat, not startToClose, and the work moves to another worker
// of the region.
func AIActivityOptions(startToClose, heartbeat time.Duration, attempts int32) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: startToClose,
		HeartbeatTimeout:    heartbeat,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			MaximumAttempts:        attempts,
			NonRetryableErrorTypes: []string{ErrTypeInvalidRequest},
		},
	}
}

// DatabaseActivityOptions are the options of local activities that run a
// few database statements: seconds, not minutes, retried while the
// database is briefly away (a failover): ten attempts, backing off from
// 100 ms to 10 s, about 33 s of waiting in all.
func DatabaseActivityOptions() workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		// Unset, the whole would be bounded by one attempt's 10 s, retries
		// included.
		ScheduleToCloseTimeout: 2 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    100 * time.Millisecond,
			BackoffCoefficient: 2,
			MaximumInterval:    10 * time.Second,
			MaximumAttempts:    10,
		},
	}
}

// ForEach runs do for every item, at most limit at a time, and returns the
// client-safe reason of every item whose do failed for good, by index, in
// item order (nil when none failed). It is the fan-out of workflows that
// process many parts of one subject (answers, pages).
func ForEach[T any](ctx workflow.Context, items []T, limit int, do func(ctx workflow.Context, item T) error) map[int]string {
	sem := workflow.NewSemaphore(ctx, int64(limit))
	wg := workflow.NewWaitGroup(ctx)
	var failed map[int]string
	for i, item := range items {
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			if err := sem.Acquire(ctx, 1); err != nil {
				return
			}
			defer sem.Release(1)
			if err := do(ctx, item); err != nil {
				if failed == nil {
					failed = map[int]string{}
				}
				failed[i] = FailureReason(err)
			}
		})
	}
	wg.Wait(ctx)
	return failed
}
