// Package grading adapts the assessment service to what the grading
// activities need (activities.GradingStore): the organization of each call
// becomes the store's tenant scope, and answers that can never be graded
// fail without retries.
package grading

import (
	"context"
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/assessd/assessd/activities"
	"github.com/assessd/assessd/assessment"
	"github.com/assessd/assessd/store"
	"github.com/assessd/assessd/workflows"
)

// Store implements activities.GradingStore with the assessment service.
type Store struct {
	content *assessment.Service
}

var _ activities.GradingStore = (*Store)(nil)

// NewStore returns a Store on content.
func NewStore(content *assessment.Service) *Store { return &Store{content: content} }

// PendingAIAnswers lists a result's answers awaiting AI grading.
func (s *Store) PendingAIAnswers(ctx context.Context, orgID, resultID string) ([]string, error) {
	return s.content.PendingAnswers(store.WithOrg(ctx, orgID), resultID)
}

// AIGradingInput loads what grading one answer needs.
func (s *Store) AIGradingInput(ctx context.Context, orgID, resultID, questionID string) (activities.GradingInput, error) {
	in, err := s.content.GradingInput(store.WithOrg(ctx, orgID), resultID, questionID)
	if errors.Is(err, assessment.ErrCannotGrade) {
		return activities.GradingInput{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeInvalidRequest, nil)
	}
	if err != nil {
		return activities.GradingInput{}, err
	}
	return activities.GradingInput{QuestionType: in.QuestionType, Prompt: in.Prompt, Config: in.Config,
		Answer: in.Answer, Points: in.Points, FileURLs: in.FileURLs}, nil
}

// RecordAIGrade stores an answer's grade and its details.
func (s *Store) RecordAIGrade(ctx context.Context, orgID, resultID, questionID string, g activities.RecordedGrade) error {
	skipped := make([]any, len(g.SkippedFiles))
	for i, f := range g.SkippedFiles {
		skipped[i] = map[string]any{"url": f.URL, "reason": f.Reason}
	}
	attached := make([]any, len(g.AttachedFiles))
	for i, u := range g.AttachedFiles {
		attached[i] = u
	}
	details := map[string]any{"rationale": g.Rationale, "region": g.Region, "attachedFiles": attached, "skippedFiles": skipped}
	return s.content.RecordGrade(store.WithOrg(ctx, orgID), resultID, questionID, g.Score, g.Feedback, details)
}

// FinishResult closes the result.
func (s *Store) FinishResult(ctx context.Context, orgID, resultID string, failures []workflows.AnswerFailure) (workflows.ResultOutcome, error) {
	byQuestion := make(map[string]string, len(failures))
	for _, f := range failures {
		byQuestion[f.AnswerID] = f.Reason
	}
	r, err := s.content.FinishResult(store.WithOrg(ctx, orgID), resultID, byQuestion)
	if err != nil {
		return workflows.ResultOutcome{}, err
	}
	return workflows.ResultOutcome{Status: r.Status, Score: r.Score, Reason: r.Reason, SubmittedAt: r.SubmittedAt}, nil
}
