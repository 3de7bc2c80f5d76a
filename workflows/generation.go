package workflows

import (
	"context"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/assessd/assessd/outbox"
)

// Activity names of exam generation.
const (
	ActivityGenerateQuestions = "GenerateQuestions"
	ActivityCreateExam        = "CreateGeneratedExam"
	ActivityFinishGeneration  = "FinishGeneration"
)

// GenerateExamInput identifies an exam generation request.
type GenerateExamInput struct {
	OrgID        string
	GenerationID string
	Region       string
}

// GeneratedQuestion is one question the provider proposed.
type GeneratedQuestion struct {
	Type   string
	Prompt string
	Config map[string]any
	Points float64
}

// FinishGenerationInput records a generation's outcome.
type FinishGenerationInput struct {
	OrgID        string
	GenerationID string
	ExamID       string
	Error        string
}

// GenerationWorkflowID is the workflow id of a generation request.
func GenerationWorkflowID(generationID string) string { return "generate-" + generationID }

// GenerationRoute is how an outbox generation row becomes a GenerateExam
// workflow; abandon fails a generation that cannot run.
func GenerationRoute(abandon func(ctx context.Context, generationID, reason string) error) Route {
	return Route{
		Workflow:   GenerateExam,
		WorkflowID: GenerationWorkflowID,
		Input: func(it outbox.Item) any {
			return GenerateExamInput{OrgID: it.OrgID, GenerationID: it.SubjectID, Region: it.Region}
		},
		Abandon: abandon,
	}
}

// GenerateExam asks the region's AI provider for questions, creates an
// exam from those that are valid for their types, and records the outcome
// (the exam, or the error).
func GenerateExam(ctx workflow.Context, in GenerateExamInput) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 3 * time.Minute,
		HeartbeatTimeout:    20 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5,
			NonRetryableErrorTypes: []string{ErrTypeInvalidRequest},
		},
	})
	var questions []GeneratedQuestion
	err := workflow.ExecuteActivity(ctx, ActivityGenerateQuestions, in).Get(ctx, &questions)
	var examID string
	if err == nil {
		err = workflow.ExecuteActivity(ctx, ActivityCreateExam, in, questions).Get(ctx, &examID)
	}
	out := FinishGenerationInput{OrgID: in.OrgID, GenerationID: in.GenerationID, ExamID: examID}
	if err != nil {
		out.Error = reason(err)
	}
	finishCtx, _ := workflow.NewDisconnectedContext(ctx)
	if ferr := workflow.ExecuteActivity(finishCtx, ActivityFinishGeneration, out).Get(finishCtx, nil); ferr != nil {
		return "", ferr
	}
	return examID, nil
}
