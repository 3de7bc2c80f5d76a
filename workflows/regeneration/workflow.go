// Package regeneration is the question regeneration workflow:
// RegenerateQuestion asks the region's AI provider for a new version of a
// question and records it as the regeneration's proposal, or records why
// there is none. Its activities are in activities/regeneration; it is
// started from the outbox (Route).
//
// Path of a request: POST /exams/{examId}/questions/{questionId}/regenerations
// stores the regeneration and its outbox row in one transaction; the
// dispatcher starts RegenerateQuestion on the region's task queue;
// ProposeQuestion (the region's AI provider), RecordProposal and, on
// failure, FailRegeneration run on that region's worker.
package regeneration

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/workflows"
)

// Activity names, registered by the worker (activities/regeneration). They
// are part of recorded histories: renaming one breaks running workflows.
const (
	ActivityProposeQuestion  = "ProposeQuestion"
	ActivityRecordProposal   = "RecordProposal"
	ActivityFailRegeneration = "FailRegeneration"
)

// Input identifies a regeneration request; it is the input of the workflow
// and of ProposeQuestion.
type Input struct {
	OrgID          string
	RegenerationID string
	Region         string
}

// RecordInput is a proposal to record (RecordProposal).
type RecordInput struct {
	Input
	Proposal ai.RegeneratedQuestion
}

// FailInput records why a regeneration failed (FailRegeneration).
type FailInput struct {
	Input
	Error string
}

// Route is how an outbox regeneration row becomes a RegenerateQuestion workflow, with id
// "regenerate-<subject id>" so a second start joins the first; a
// regeneration is unfinished while running, and abandoning it fails it.
func Route(regenerations workflows.Subjects) workflows.Route {
	return workflows.Route{Workflow: RegenerateQuestion, IDPrefix: "regenerate-", Subjects: regenerations, Input: func(it outbox.Item) any {
		return Input{OrgID: it.OrgID, RegenerationID: it.SubjectID, Region: it.Region}
	}}
}

// RegenerateQuestion asks the region's AI provider for a new version of
// the question and records it (the regeneration becomes ready, or failed
// when the proposal is not valid for the question's type); when the
// provider cannot answer, it records the failure. It returns the
// regeneration's status.
func RegenerateQuestion(ctx workflow.Context, in Input) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflows.AIActivityOptions(3*time.Minute, 20*time.Second, 5))
	var proposal ai.RegeneratedQuestion
	err := workflow.ExecuteActivity(ctx, ActivityProposeQuestion, in).Get(ctx, &proposal)
	var status string
	if err == nil {
		err = workflow.ExecuteActivity(ctx, ActivityRecordProposal, RecordInput{Input: in, Proposal: proposal}).Get(ctx, &status)
	}
	if err == nil {
		return status, nil
	}
	finishCtx, _ := workflow.NewDisconnectedContext(ctx)
	fail := FailInput{Input: in, Error: workflows.FailureReason(err)}
	if ferr := workflow.ExecuteActivity(finishCtx, ActivityFailRegeneration, fail).Get(finishCtx, nil); ferr != nil {
		return "", ferr
	}
	return "failed", nil
}
