package scanning

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/assessd/assessd/workflows"
)

// fakeScanning records what the workflow asks of its activities.
type fakeScanning struct {
	pages     []int
	splitErr  error
	failOnce  map[int]bool // transient failure on the first attempt
	invalid   map[int]bool // non-retryable failure
	reads     atomic.Int32
	inFlight  atomic.Int32
	maxFlight atomic.Int32
	finished  *FinishInput
	failed    *FailInput
}

func (f *fakeScanning) SplitScan(context.Context, Input) ([]int, error) { return f.pages, f.splitErr }

func (f *fakeScanning) ReadPage(ctx context.Context, in PageInput) error {
	f.reads.Add(1)
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for m := f.maxFlight.Load(); n > m && !f.maxFlight.CompareAndSwap(m, n); m = f.maxFlight.Load() {
	}
	if f.invalid[in.Page] {
		return temporal.NewNonRetryableApplicationError("the AI provider rejected the answer box", workflows.ErrTypeInvalidRequest, nil)
	}
	if f.failOnce[in.Page] && activity.GetInfo(ctx).Attempt == 1 {
		return errors.New("provider timeout")
	}
	return nil
}

func (f *fakeScanning) FinishScan(_ context.Context, in FinishInput) (Outcome, error) {
	f.finished = &in
	return Outcome{Status: "completed", Pages: len(f.pages), Errors: len(in.Failures)}, nil
}

func (f *fakeScanning) FailScan(_ context.Context, in FailInput) error {
	f.failed = &in
	return nil
}

func run(t *testing.T, f *fakeScanning) Outcome {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(ScanSheets)
	env.RegisterActivityWithOptions(f.SplitScan, activity.RegisterOptions{Name: ActivitySplitScan})
	env.RegisterActivityWithOptions(f.ReadPage, activity.RegisterOptions{Name: ActivityReadPage})
	env.RegisterActivityWithOptions(f.FinishScan, activity.RegisterOptions{Name: ActivityFinishScan})
	env.RegisterActivityWithOptions(f.FailScan, activity.RegisterOptions{Name: ActivityFailScan})
	env.ExecuteWorkflow(ScanSheets, Input{OrgID: "org_1", ScanID: "scn_1", Region: "eu"})
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	var out Outcome
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestScanSheetsReadsEveryPageAndReportsFailures(t *testing.T) {
	f := &fakeScanning{failOnce: map[int]bool{2: true}, invalid: map[int]bool{5: true}}
	for p := 1; p <= 9; p++ {
		f.pages = append(f.pages, p)
	}
	out := run(t, f)
	if out.Status != "completed" || f.failed != nil || f.finished == nil {
		t.Fatalf("outcome %+v, failed %+v", out, f.failed)
	}
	if fs := f.finished.Failures; len(fs) != 1 || fs[0].Page != 5 || fs[0].Reason != "the AI provider rejected the answer box" {
		t.Fatalf("failures %+v", fs)
	}
	if got := f.reads.Load(); got != 10 {
		t.Fatalf("ReadPage ran %d times, want 10 (one retry, none of the invalid page)", got)
	}
	if got := f.maxFlight.Load(); got > MaxParallelPages {
		t.Fatalf("%d pages read at once, limit %d", got, MaxParallelPages)
	}
}

func TestScanSheetsFailsWhenFilesCannotBeSplit(t *testing.T) {
	f := &fakeScanning{splitErr: temporal.NewNonRetryableApplicationError("the worker cannot read PDF files", workflows.ErrTypeInvalidRequest, nil)}
	out := run(t, f)
	if out.Status != "failed" || f.finished != nil || f.failed == nil || f.failed.Reason != "the worker cannot read PDF files" {
		t.Fatalf("outcome %+v, failed %+v", out, f.failed)
	}
}
