package grading

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/workflows"
)

// fakeGrading records what the workflow asks of its activities.
type fakeGrading struct {
	pending     []string
	failOnce    map[string]bool // transient failure on the first call
	failed      sync.Map        // answers whose first call failed
	invalid     map[string]bool // non-retryable failure
	calls       atomic.Int32
	listed      atomic.Int32 // PendingAnswers calls
	inFlight    atomic.Int32
	maxInFlight atomic.Int32
	finished    FinishInput
}

func (f *fakeGrading) PendingAnswers(context.Context, Input) ([]string, error) {
	f.listed.Add(1)
	return f.pending, nil
}

func (f *fakeGrading) GradeAnswer(_ context.Context, in AnswerInput) error {
	f.calls.Add(1)
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxInFlight.Load()
		if n <= m || f.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	if f.invalid[in.AnswerID] {
		return temporal.NewNonRetryableApplicationError("the AI provider rejected the request", workflows.ErrTypeInvalidRequest, nil)
	}
	if _, again := f.failed.LoadOrStore(in.AnswerID, true); f.failOnce[in.AnswerID] && !again {
		return errors.New("provider timeout")
	}
	return nil
}

func (f *fakeGrading) FinishResult(_ context.Context, in FinishInput) (Outcome, error) {
	f.finished = in
	if len(in.Failures) > 0 {
		return Outcome{Status: "failed", Reason: in.Failures[0].Reason}, nil
	}
	return Outcome{Status: "graded", Score: 7}, nil
}

// run grades f.pending as the dispatcher starts it: with the input Route
// makes of the claimed row, which carries the answers.
func run(t *testing.T, f *fakeGrading) (Outcome, error) {
	t.Helper()
	return runWith(t, f, Route(workflows.Subjects{}).Input(outbox.Item{Kind: outbox.KindGrading, OrgID: "org_1", SubjectID: "res_1", Region: "eu", Answers: f.pending}).(Input))
}

func runWith(t *testing.T, f *fakeGrading, in Input) (Outcome, error) {
	t.Helper()
	env := newEnv(f)
	env.ExecuteWorkflow(GradeResult, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	var out Outcome
	err := env.GetWorkflowResult(&out)
	return out, err
}

func newEnv(f *fakeGrading) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(GradeResult)
	env.RegisterActivityWithOptions(f.PendingAnswers, activity.RegisterOptions{Name: ActivityPendingAnswers})
	env.RegisterActivityWithOptions(f.GradeAnswer, activity.RegisterOptions{Name: ActivityGradeAnswer})
	env.RegisterActivityWithOptions(f.FinishResult, activity.RegisterOptions{Name: ActivityFinishResult})
	return env
}

// A run started by a newer release, with a version this code does not
// know, grades nothing: its workflow task fails (and is retried until a
// newer worker takes it) instead of following today's steps.
func TestGradeResultRefusesAVersionItDoesNotKnow(t *testing.T) {
	f := &fakeGrading{pending: []string{"a1"}}
	env := newEnv(f)
	env.ExecuteWorkflow(GradeResult, Input{OrgID: "org_1", ResultID: "res_1", Region: "eu", Version: answersInInput + 1})
	if _, panicked := errors.AsType[*temporal.PanicError](env.GetWorkflowError()); !panicked {
		t.Fatalf("workflow error %v, want the task's panic", env.GetWorkflowError())
	}
	if f.calls.Load() != 0 || f.finished.ResultID != "" {
		t.Fatalf("graded %d answers and finished %q", f.calls.Load(), f.finished.ResultID)
	}
}

// Today's runs take their answers from the input; a run started before
// the input carried them (no version in it: the version marker's) lists
// them with PendingAnswers.
func TestGradeResultReadsItsAnswersFromTheInput(t *testing.T) {
	f := &fakeGrading{pending: []string{"a1", "a2"}}
	if out, err := run(t, f); err != nil || out.Status != "graded" || f.calls.Load() != 2 || f.listed.Load() != 0 {
		t.Fatalf("outcome %+v, %v: graded %d answers, listed them %d times; want 2 and 0", out, err, f.calls.Load(), f.listed.Load())
	}
	f = &fakeGrading{pending: []string{"a1", "a2"}}
	if out, err := runWith(t, f, Input{OrgID: "org_1", ResultID: "res_1", Region: "eu"}); err != nil || out.Status != "graded" || f.calls.Load() != 2 || f.listed.Load() != 1 {
		t.Fatalf("older input: outcome %+v, %v: graded %d answers, listed them %d times; want 2 and 1", out, err, f.calls.Load(), f.listed.Load())
	}
	// A claimed result with no answer left to grade is finished at once.
	f = &fakeGrading{}
	if out, err := run(t, f); err != nil || out.Status != "graded" || f.calls.Load() != 0 || f.finished.ResultID != "res_1" {
		t.Fatalf("nothing to grade: outcome %+v, %v, graded %d, finished %q", out, err, f.calls.Load(), f.finished.ResultID)
	}
}

func TestGradeResultRetriesTransientErrors(t *testing.T) {
	f := &fakeGrading{pending: []string{"a1", "a2", "a3"}, failOnce: map[string]bool{"a2": true}}
	out, err := run(t, f)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != "graded" || len(f.finished.Failures) != 0 {
		t.Fatalf("outcome %+v, failures %+v", out, f.finished.Failures)
	}
	if got := f.calls.Load(); got != 4 {
		t.Fatalf("GradeAnswer ran %d times, want 4 (one retry)", got)
	}
}

func TestGradeResultFailsOnInvalidRequestWithoutRetrying(t *testing.T) {
	f := &fakeGrading{pending: []string{"a1", "a2"}, invalid: map[string]bool{"a1": true}}
	out, err := run(t, f)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != "failed" || len(f.finished.Failures) != 1 || f.finished.Failures[0].AnswerID != "a1" ||
		f.finished.Failures[0].Reason != "the AI provider rejected the request" {
		t.Fatalf("outcome %+v, failures %+v", out, f.finished.Failures)
	}
	if got := f.calls.Load(); got != 2 {
		t.Fatalf("GradeAnswer ran %d times, want 2 (no retry of an invalid request)", got)
	}
}

func TestGradeResultBoundsParallelism(t *testing.T) {
	f := &fakeGrading{}
	for i := range 12 {
		f.pending = append(f.pending, string(rune('a'+i)))
	}
	if _, err := run(t, f); err != nil {
		t.Fatal(err)
	}
	if got := f.maxInFlight.Load(); got > MaxParallelAnswers {
		t.Fatalf("%d answers graded at once, limit %d", got, MaxParallelAnswers)
	}
	if got := f.calls.Load(); got != 12 {
		t.Fatalf("graded %d answers, want 12", got)
	}
}
