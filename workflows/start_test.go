package workflows

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/assessd/assessd/devenv/devenvtest"
)

// TestStartGradingTwiceGradesOnce runs the real dev server: a second start
// of the same result joins the first workflow, and the result is graded
// once, by a worker of the region's queue only.
func TestStartGradingTwiceGradesOnce(t *testing.T) {
	ctx := context.Background()
	c := devenvtest.Temporal(t)

	eu := &fakeGrading{pending: []string{"a1"}}
	global := &fakeGrading{pending: []string{"a1"}}
	for queue, acts := range map[string]*fakeGrading{TaskQueueEU: eu, TaskQueueGlobal: global} {
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

	s := Starter{Client: c}
	in := GradeResultInput{OrgID: "org_1", ResultID: "res_twice", Region: "eu"}
	for range 2 {
		if err := s.StartGrading(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	run := c.GetWorkflow(ctx, WorkflowID(in.ResultID), "")
	var out ResultOutcome
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := run.Get(waitCtx, &out); err != nil {
		t.Fatal(err)
	}
	if err := s.StartGrading(ctx, in); err != nil {
		t.Fatalf("start after completion: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	if got := eu.calls.Load(); got != 1 {
		t.Fatalf("the EU worker graded %d times, want once", got)
	}
	if got := global.calls.Load(); got != 0 {
		t.Fatalf("the global worker graded an EU result %d times", got)
	}
}
