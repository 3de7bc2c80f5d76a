package ltiscores

import (
	"context"
	"errors"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/workflows"
)

// run runs PostScore as the dispatcher starts it, PostLTIScore failing
// with the errors of fails before it succeeds, and returns the reasons
// GiveUpLTIScore was given and how often the post was tried.
func run(t *testing.T, fails ...error) (gaveUp []string, posts int) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(PostScore)
	env.RegisterActivityWithOptions(func(_ context.Context, in Input) error {
		posts++
		if in != (Input{OrgID: "org_1", ResultID: "res_1", Region: "eu"}) {
			t.Errorf("post of %+v", in)
		}
		if posts <= len(fails) {
			return fails[posts-1]
		}
		return nil
	}, activity.RegisterOptions{Name: ActivityPost})
	env.RegisterActivityWithOptions(func(_ context.Context, in GiveUpInput) error {
		gaveUp = append(gaveUp, in.Reason)
		return nil
	}, activity.RegisterOptions{Name: ActivityGiveUp})
	env.ExecuteWorkflow(PostScore, Route(workflows.Subjects{}).Input(outbox.Item{Kind: outbox.KindLTIScore, OrgID: "org_1", SubjectID: "res_1", Region: "eu"}))
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	return gaveUp, posts
}

func TestPostScoreRetriesAnOutage(t *testing.T) {
	gaveUp, posts := run(t, errors.New("score post answered 503"), errors.New("connection refused"))
	if posts != 3 || len(gaveUp) != 0 {
		t.Fatalf("%d posts, given up %v; want 3 and never", posts, gaveUp)
	}
}

func TestPostScoreGivesUpARefusal(t *testing.T) {
	gaveUp, posts := run(t, workflows.Permanent("score post answered 400: unknown user", nil))
	if posts != 1 || len(gaveUp) != 1 || gaveUp[0] != "score post answered 400: unknown user" {
		t.Fatalf("%d posts, given up %v; want 1 and the refusal", posts, gaveUp)
	}
}

func TestPostScoreGivesUpAfterTheWindow(t *testing.T) {
	fails := make([]error, 100)
	for i := range fails {
		fails[i] = errors.New("score post answered 503")
	}
	gaveUp, _ := run(t, fails...)
	if len(gaveUp) != 1 {
		t.Fatalf("given up %v, want once when the window closed", gaveUp)
	}
}
