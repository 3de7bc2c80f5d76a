package grading

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/testkit/devenvtest"
	"github.com/assessd/assessd/workflows"
)

// TestStartGradingTwiceGradesOnce runs the real dev server: a second start
// of the same result joins the first workflow, a start after it completed
// returns that run instead of grading again unless the row was restarted,
// and only a worker of the region's queue grades.
func TestStartGradingTwiceGradesOnce(t *testing.T) {
	ctx := context.Background()
	c := devenvtest.Temporal(t)

	eu := &fakeGrading{pending: []string{"a1"}}
	global := &fakeGrading{pending: []string{"a1"}}
	for region, acts := range map[string]*fakeGrading{"eu": eu, "global": global} {
		queue, err := workflows.RegionTaskQueue(region)
		if err != nil {
			t.Fatal(err)
		}
		w := worker.New(c, queue, worker.Options{})
		w.RegisterWorkflow(GradeResult)
		w.RegisterActivityWithOptions(acts.PendingAnswers, activity.RegisterOptions{Name: ActivityPendingAnswers})
		w.RegisterActivityWithOptions(acts.GradeAnswer, activity.RegisterOptions{Name: ActivityGradeAnswer})
		w.RegisterActivityWithOptions(acts.FinishResult, activity.RegisterOptions{Name: ActivityFinishResult})
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
	}

	route := Route(workflows.Subjects{})
	it := outbox.Item{Kind: outbox.KindGrading, OrgID: "org_1", SubjectID: "res_twice", Region: "eu", Answers: []string{"a1"}}
	for range 2 {
		if err := workflows.Start(ctx, c, route, it); err != nil {
			t.Fatal(err)
		}
	}
	run := c.GetWorkflow(ctx, Route(workflows.Subjects{}).WorkflowID(it.SubjectID), "")
	var out Outcome
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := run.Get(waitCtx, &out); err != nil {
		t.Fatal(err)
	}
	completed := latestRun(t, c, Route(workflows.Subjects{}).WorkflowID(it.SubjectID))
	if err := workflows.Start(ctx, c, route, it); err != nil {
		t.Fatalf("start after completion: %v", err)
	}
	// The start after completion must not have opened a new run: the
	// latest run of the id is still the completed first one.
	if latest := latestRun(t, c, Route(workflows.Subjects{}).WorkflowID(it.SubjectID)); latest != completed {
		t.Fatalf("a start after completion opened run %s besides %s", latest, completed)
	}
	if got := eu.calls.Load(); got != 1 {
		t.Fatalf("the EU worker graded %d times, want once", got)
	}
	// A restarted row (the subject must be graded again) runs anew.
	again := it
	again.Restarts = 1
	if err := workflows.Start(ctx, c, route, again); err != nil {
		t.Fatalf("restarted start: %v", err)
	}
	if err := c.GetWorkflow(ctx, Route(workflows.Subjects{}).WorkflowID(it.SubjectID), "").Get(waitCtx, &out); err != nil {
		t.Fatal(err)
	}
	if latestRun(t, c, Route(workflows.Subjects{}).WorkflowID(it.SubjectID)) == completed {
		t.Fatal("a restarted row joined the completed run")
	}
	if got := eu.calls.Load(); got != 2 {
		t.Fatalf("the EU worker graded %d times after the restart, want twice", got)
	}
	if got := global.calls.Load(); got != 0 {
		t.Fatalf("the global worker graded an EU result %d times", got)
	}
}

// latestRun returns the run id of the latest run of workflow id.
func latestRun(t *testing.T, c client.Client, id string) string {
	t.Helper()
	desc, err := c.DescribeWorkflowExecution(context.Background(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	return desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
}
