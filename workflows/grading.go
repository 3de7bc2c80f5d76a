// Package workflows holds assessd's durable Temporal workflows: grading a
// submitted result and generating an exam. Workflow code is deterministic;
// every side effect (database, AI provider, file fetching) happens in
// activities, which the workflows call by name so this package depends on
// nothing but the SDK.
package workflows

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/assessd/assessd/outbox"
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

// Activity names, registered by the worker.
const (
	ActivityPendingAnswers = "PendingAnswers"
	ActivityGradeAnswer    = "GradeAnswer"
	ActivityFinishResult   = "FinishResult"
)

// ErrTypeInvalidRequest is the application error type of failures retrying
// cannot fix (the AI provider refused the request).
const ErrTypeInvalidRequest = "InvalidRequest"

// MaxParallelAnswers bounds the AI calls one result makes at once.
const MaxParallelAnswers = 4

// GradeResultInput identifies a submitted result.
type GradeResultInput struct {
	OrgID    string
	ResultID string
	Region   string
}

// GradeAnswerInput identifies one answer to grade with AI.
type GradeAnswerInput struct {
	OrgID    string
	ResultID string
	AnswerID string
	Region   string
}

// AnswerFailure is an answer whose AI grading failed for good.
type AnswerFailure struct {
	AnswerID string
	Reason   string
}

// FinishResultInput closes a result: the scores are summed and the status
// becomes graded, or failed when any answer failed.
type FinishResultInput struct {
	OrgID    string
	ResultID string
	Failures []AnswerFailure
}

// ResultOutcome is the final state of a result.
type ResultOutcome struct {
	Status      string
	Score       float64
	Reason      string
	SubmittedAt time.Time
}

// WorkflowID is the grading workflow id of a result: derived from the result
// id, so a second start for the same result is refused, never graded twice.
func WorkflowID(resultID string) string { return "grade-" + resultID }

// GradingRoute is how an outbox grading row becomes a GradeResult
// workflow; abandon fails a result whose grading cannot run.
func GradingRoute(abandon func(ctx context.Context, resultID, reason string) error) Route {
	return Route{
		Workflow:   GradeResult,
		WorkflowID: WorkflowID,
		Input: func(it outbox.Item) any {
			return GradeResultInput{OrgID: it.OrgID, ResultID: it.SubjectID, Region: it.Region}
		},
		Abandon: abandon,
	}
}

// GradeResult grades the AI-graded answers of a result (rules-scored answers
// were scored on submission), at most MaxParallelAnswers at a time, and
// finishes the result. Transient AI errors are retried with backoff; an
// answer that cannot be graded is recorded and fails the result with a
// reason.
func GradeResult(ctx workflow.Context, in GradeResultInput) (ResultOutcome, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		// Activities heartbeat while they wait for the AI provider, so a
		// worker that dies mid-call is noticed in seconds, not minutes, and
		// the answer is retried on another worker of the region.
		HeartbeatTimeout: 10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			MaximumAttempts:        6,
			NonRetryableErrorTypes: []string{ErrTypeInvalidRequest},
		},
	})
	var pending []string
	if err := workflow.ExecuteActivity(ctx, ActivityPendingAnswers, in).Get(ctx, &pending); err != nil {
		return ResultOutcome{}, err
	}
	sem := workflow.NewSemaphore(ctx, MaxParallelAnswers)
	wg := workflow.NewWaitGroup(ctx)
	var failures []AnswerFailure
	for _, answerID := range pending {
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			if err := sem.Acquire(ctx, 1); err != nil {
				return
			}
			defer sem.Release(1)
			err := workflow.ExecuteActivity(ctx, ActivityGradeAnswer, GradeAnswerInput{
				OrgID: in.OrgID, ResultID: in.ResultID, AnswerID: answerID, Region: in.Region,
			}).Get(ctx, nil)
			if err != nil {
				failures = append(failures, AnswerFailure{AnswerID: answerID, Reason: reason(err)})
			}
		})
	}
	wg.Wait(ctx)
	slices.SortFunc(failures, func(a, b AnswerFailure) int { return strings.Compare(a.AnswerID, b.AnswerID) })

	// Finishing must happen even if the workflow is being cancelled.
	finishCtx, _ := workflow.NewDisconnectedContext(ctx)
	var out ResultOutcome
	err := workflow.ExecuteActivity(finishCtx, ActivityFinishResult, FinishResultInput{
		OrgID: in.OrgID, ResultID: in.ResultID, Failures: failures,
	}).Get(finishCtx, &out)
	return out, err
}

// reason is the client-safe text of an activity failure.
func reason(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	return "the AI provider failed after retries"
}
