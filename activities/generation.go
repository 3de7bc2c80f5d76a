package activities

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/assessd/assessd/ai"
	"github.com/assessd/assessd/workflows"
)

// GenerationStore is what exam generation needs from storage.
type GenerationStore interface {
	// GenerationRequest returns what was asked for.
	GenerationRequest(ctx context.Context, orgID, generationID string) (ai.GenerateRequest, error)
	// CreateGeneratedExam creates the exam with the questions that are
	// valid for their types and returns its id; none valid is an error.
	// Called again for the same generation it returns the same exam.
	CreateGeneratedExam(ctx context.Context, orgID, generationID string, questions []workflows.GeneratedQuestion) (string, error)
	// FinishGeneration records the outcome.
	FinishGeneration(ctx context.Context, in workflows.FinishGenerationInput) error
}

// Generation implements the generation workflow's activities for one region.
type Generation struct {
	Store    GenerationStore
	Provider ai.Provider
	Region   string
}

// Register registers the activities on w under the workflow's names.
func (g *Generation) Register(w worker.Registry) {
	w.RegisterActivityWithOptions(g.GenerateQuestions, activity.RegisterOptions{Name: workflows.ActivityGenerateQuestions})
	w.RegisterActivityWithOptions(g.CreateGeneratedExam, activity.RegisterOptions{Name: workflows.ActivityCreateExam})
	w.RegisterActivityWithOptions(g.Store.FinishGeneration, activity.RegisterOptions{Name: workflows.ActivityFinishGeneration})
}

// GenerateQuestions asks the region's provider for the questions.
func (g *Generation) GenerateQuestions(ctx context.Context, in workflows.GenerateExamInput) ([]workflows.GeneratedQuestion, error) {
	if in.Region != g.Region {
		return nil, temporal.NewNonRetryableApplicationError("a "+in.Region+" generation reached a "+g.Region+" worker", workflows.ErrTypeInvalidRequest, nil)
	}
	defer heartbeat(ctx, 5*time.Second)()
	req, err := g.Store.GenerationRequest(ctx, in.OrgID, in.GenerationID)
	if err != nil {
		return nil, err
	}
	req.Region = g.Region
	qs, err := g.Provider.GenerateQuestions(ctx, req)
	if errors.Is(err, ai.ErrInvalidRequest) {
		return nil, temporal.NewNonRetryableApplicationError("the AI provider rejected the generation request", workflows.ErrTypeInvalidRequest, err)
	}
	if err != nil {
		return nil, err
	}
	out := make([]workflows.GeneratedQuestion, len(qs))
	for i, q := range qs {
		out[i] = workflows.GeneratedQuestion{Type: q.Type, Prompt: q.Prompt, Config: q.Config, Points: q.Points}
	}
	return out, nil
}

// CreateGeneratedExam creates the exam from the generated questions.
func (g *Generation) CreateGeneratedExam(ctx context.Context, in workflows.GenerateExamInput, qs []workflows.GeneratedQuestion) (string, error) {
	return g.Store.CreateGeneratedExam(ctx, in.OrgID, in.GenerationID, qs)
}
