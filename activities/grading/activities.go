// Package grading holds the grading workflow's activities
// (workflows/grading): listing a result's pending answers, grading one
// answer with the files from the media CDN and the region's AI provider,
// and finishing the result, all through the results store.
package grading

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/assessd/assessd/activities"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/membudget"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/workflows"
	wf "github.com/assessd/assessd/workflows/grading"
)

// Results is what grading needs of the results store. Writes are
// conditional on the answer still pending (or the result still grading),
// so a retried activity writes nothing twice. Calls run for the
// organization in ctx.
type Results interface {
	PendingAnswers(ctx context.Context, resultID string) ([]string, error)
	GradingInput(ctx context.Context, resultID, questionID string) (assessment.GradingInput, error)
	RecordGrade(ctx context.Context, resultID, questionID string, score float64, feedback string, details map[string]any) error
	FinishResult(ctx context.Context, resultID string, failures map[string]string) (assessment.Result, error)
}

var _ Results = (*assessment.Service)(nil)

// Activities are the grading activities of one region's worker.
type Activities struct {
	Results  Results
	Provider ai.Provider
	Fetcher  *media.Fetcher
	// Memory bounds the answer files held at once; nil shares the
	// worker process's budget (membudget.Worker).
	Memory  *membudget.Budget
	Region  string
	Metrics *Metrics
}

// Register registers the activities on w under the workflow's names.
func (a *Activities) Register(w worker.Registry) {
	w.RegisterActivityWithOptions(a.PendingAnswers, activity.RegisterOptions{Name: wf.ActivityPendingAnswers})
	w.RegisterActivityWithOptions(a.GradeAnswer, activity.RegisterOptions{Name: wf.ActivityGradeAnswer})
	w.RegisterActivityWithOptions(a.FinishResult, activity.RegisterOptions{Name: wf.ActivityFinishResult})
}

// PendingAnswers lists the answers still awaiting AI grading.
func (a *Activities) PendingAnswers(ctx context.Context, in wf.Input) ([]string, error) {
	return a.Results.PendingAnswers(store.WithOrg(ctx, in.OrgID), in.ResultID)
}

// GradeAnswer fetches the answer's files from the media CDN (others are
// skipped and the skip recorded), asks the provider for a grade, and records
// it with its details. Answers that can never be graded and requests the
// provider refuses fail for good; everything else is retried.
func (a *Activities) GradeAnswer(ctx context.Context, in wf.AnswerInput) error {
	if in.Region != a.Region {
		// Task queues already keep regions apart; this refuses a
		// misrouted task before any answer data reaches the provider.
		return workflows.Permanent(fmt.Sprintf("a %s result reached a %s worker", in.Region, a.Region), nil)
	}
	defer activities.Heartbeat(ctx, 2*time.Second)()
	ctx = store.WithOrg(ctx, in.OrgID)
	input, err := a.Results.GradingInput(ctx, in.ResultID, in.AnswerID)
	if errors.Is(err, assessment.ErrCannotGrade) {
		return workflows.Permanent(err.Error(), nil)
	}
	if err != nil {
		return err
	}
	a.Metrics.answerGraded(in.OrgID, a.Region)
	files, err := a.fetchFiles(ctx, in.OrgID, input.FileURLs)
	if err != nil {
		return err
	}
	defer files.release()
	grade, err := a.Provider.Grade(ctx, ai.GradeRequest{
		Region: a.Region, QuestionType: input.QuestionType, Prompt: input.Prompt, Config: input.Config,
		Answer: input.Answer, MaxScore: input.Points, Files: files.files,
	})
	if errors.Is(err, ai.ErrInvalidRequest) {
		return workflows.Permanent("the AI provider rejected the grading request", err)
	}
	if err != nil {
		return err
	}
	details := map[string]any{"rationale": grade.Rationale, "region": a.Region, "attachedFiles": files.attached, "skippedFiles": files.skipped}
	return a.Results.RecordGrade(ctx, in.ResultID, in.AnswerID, grade.Score, grade.Feedback, details)
}

// FinishResult totals the result and records the outcome.
func (a *Activities) FinishResult(ctx context.Context, in wf.FinishInput) (wf.Outcome, error) {
	failures := make(map[string]string, len(in.Failures))
	for _, f := range in.Failures {
		failures[f.AnswerID] = f.Reason
	}
	r, err := a.Results.FinishResult(store.WithOrg(ctx, in.OrgID), in.ResultID, failures)
	if err != nil {
		return wf.Outcome{}, workflows.PermanentIfGone(err, "the result")
	}
	a.Metrics.finished(in.OrgID, a.Region, r.Status, time.Since(r.SubmittedAt))
	return wf.Outcome{Status: r.Status, Score: r.Score, Reason: r.Reason, SubmittedAt: r.SubmittedAt}, nil
}
