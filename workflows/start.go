package workflows

import (
	"context"
	"fmt"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// Starter starts grading workflows.
type Starter struct {
	Client client.Client
}

// StartGrading starts the grading workflow of a result on the task queue of
// region, the organization's aiRegion at the time of the request. The
// workflow id is derived from the result id, so starting it again (a
// retried request, a redelivered message) joins the running or finished
// workflow instead of grading twice.
func (s Starter) StartGrading(ctx context.Context, in GradeResultInput) error {
	_, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       WorkflowID(in.ResultID),
		TaskQueue:                TaskQueue(in.Region),
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, GradeResult, in)
	if err != nil {
		return fmt.Errorf("start grading of %s: %w", in.ResultID, err)
	}
	return nil
}

// StartGeneration starts the generation workflow of a request on its
// region's task queue; starting it again joins it.
func (s Starter) StartGeneration(ctx context.Context, in GenerateExamInput) error {
	_, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       GenerationWorkflowID(in.GenerationID),
		TaskQueue:                TaskQueue(in.Region),
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, GenerateExam, in)
	if err != nil {
		return fmt.Errorf("start generation %s: %w", in.GenerationID, err)
	}
	return nil
}
