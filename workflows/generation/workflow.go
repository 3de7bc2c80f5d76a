// Package generation is the exam generation workflow: GenerateExam asks the
// region's AI provider for questions, creates an exam from the valid ones
// and records the outcome. Its activities are in activities/generation; it
// is started from the outbox (Route).
//
// Path of a request: POST /exam-generations stores the generation and its
// outbox row in one transaction; the dispatcher starts GenerateExam on the
// region's task queue; GenerateQuestions (the region's AI provider),
// CreateGeneratedExam and FinishGeneration run on that region's worker.
package generation

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/workflows"
)

// Activity names, registered by the worker (activities/generation). They
// are part of recorded histories: renaming one breaks running workflows.
const (
	ActivityGenerateQuestions = "GenerateQuestions"
	ActivityCreateExam        = "CreateGeneratedExam"
	ActivityFinishGeneration  = "FinishGeneration"
)

// Input identifies an exam generation request; it is the input of the
// workflow, of GenerateQuestions and of CreateGeneratedExam.
type Input struct {
	OrgID        string
	GenerationID string
	Region       string
}

// FinishInput records a generation's outcome (FinishGeneration): the exam,
// or the error.
type FinishInput struct {
	OrgID        string
	GenerationID string
	ExamID       string
	Error        string
}

// Route is how an outbox generation row becomes a GenerateExam workflow, with id
// "generate-<subject id>" so a second start joins the first; a generation
// is unfinished while running, and abandoning it fails it.
func Route(generations workflows.Subjects) workflows.Route {
	return workflows.Route{Workflow: GenerateExam, IDPrefix: "generate-", Subjects: generations, Input: func(it outbox.Item) any {
		return Input{OrgID: it.OrgID, GenerationID: it.SubjectID, Region: it.Region}
	}}
}

// GenerateExam asks the region's AI provider for questions, creates an
// exam from those that are valid for their types, and records the outcome
// (the exam, or the error). It returns the exam id.
func GenerateExam(ctx workflow.Context, in Input) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflows.AIActivityOptions(3*time.Minute, 20*time.Second, 5))
	var questions []ai.GeneratedQuestion
	err := workflow.ExecuteActivity(ctx, ActivityGenerateQuestions, in).Get(ctx, &questions)
	var examID string
	if err == nil {
		err = workflow.ExecuteActivity(ctx, ActivityCreateExam, in, questions).Get(ctx, &examID)
	}
	out := FinishInput{OrgID: in.OrgID, GenerationID: in.GenerationID, ExamID: examID}
	if err != nil {
		out.Error = workflows.FailureReason(err)
	}
	finishCtx, _ := workflow.NewDisconnectedContext(ctx)
	if ferr := workflow.ExecuteActivity(finishCtx, ActivityFinishGeneration, out).Get(finishCtx, nil); ferr != nil {
		return "", ferr
	}
	return examID, nil
}
