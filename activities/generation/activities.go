// Package generation holds the exam generation workflow's activities
// (workflows/generation): asking the region's AI provider for questions,
// creating the exam from them, and recording the outcome.
package generation

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/assessd/assessd/activities"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/generation"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/workflows"
	wf "github.com/assessd/assessd/workflows/generation"
)

// Generations is what the activities need of the generation store. Calls
// run for the organization in ctx; CreateExam and Finish are idempotent.
type Generations interface {
	Request(ctx context.Context, id string) (ai.GenerateRequest, error)
	CreateExam(ctx context.Context, id string, qs []ai.GeneratedQuestion) (string, error)
	Finish(ctx context.Context, id, failure string) (status string, err error)
}

var _ Generations = (*generation.Service)(nil)

// Activities are the generation activities of one region's worker.
type Activities struct {
	Generations Generations
	Provider    ai.Provider
	Region      string
	Metrics     *Metrics
}

// Register registers the activities on w under the workflow's names.
func (a *Activities) Register(w worker.Registry) {
	w.RegisterActivityWithOptions(a.GenerateQuestions, activity.RegisterOptions{Name: wf.ActivityGenerateQuestions})
	w.RegisterActivityWithOptions(a.CreateGeneratedExam, activity.RegisterOptions{Name: wf.ActivityCreateExam})
	w.RegisterActivityWithOptions(a.FinishGeneration, activity.RegisterOptions{Name: wf.ActivityFinishGeneration})
}

// GenerateQuestions asks the region's provider for the questions.
func (a *Activities) GenerateQuestions(ctx context.Context, in wf.Input) ([]ai.GeneratedQuestion, error) {
	if in.Region != a.Region {
		return nil, workflows.Permanent("a "+in.Region+" generation reached a "+a.Region+" worker", nil)
	}
	defer activities.Heartbeat(ctx, 5*time.Second)()
	req, err := a.Generations.Request(store.WithOrg(ctx, in.OrgID), in.GenerationID)
	if err != nil {
		return nil, err
	}
	req.Region = a.Region
	qs, err := a.Provider.GenerateQuestions(ctx, req)
	if errors.Is(err, ai.ErrInvalidRequest) {
		return nil, workflows.Permanent("the AI provider rejected the generation request", err)
	}
	if err != nil {
		return nil, err
	}
	return qs, activities.CheckResultSize("the generated questions", qs)
}

// CreateGeneratedExam creates the exam from the generated questions.
func (a *Activities) CreateGeneratedExam(ctx context.Context, in wf.Input, qs []ai.GeneratedQuestion) (string, error) {
	examID, err := a.Generations.CreateExam(store.WithOrg(ctx, in.OrgID), in.GenerationID, qs)
	if errors.Is(err, generation.ErrNoValidQuestion) {
		return "", workflows.Permanent(err.Error(), nil)
	}
	return examID, err
}

// FinishGeneration records the outcome and counts it, once.
func (a *Activities) FinishGeneration(ctx context.Context, in wf.FinishInput) error {
	status, err := a.Generations.Finish(store.WithOrg(ctx, in.OrgID), in.GenerationID, in.Error)
	if err == nil {
		a.Metrics.finished(in.OrgID, a.Region, status)
	}
	return err
}
