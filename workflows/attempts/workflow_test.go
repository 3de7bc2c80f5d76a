package attempts

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/workflows"
)

// start is when every test's workflow starts, by the test clock. It is
// the wall clock's: local activities' timeouts are measured on it.
var start = time.Now().UTC().Truncate(time.Second).Add(time.Second)

// fakeClose answers CloseAttempt from a script, one answer per call (the
// last repeats), and records when, by the workflow's clock, it was asked.
type fakeClose struct {
	env     *testsuite.TestWorkflowEnvironment
	answers []func() (Closing, error)
	asked   []time.Time
	inputs  []Input
}

func (f *fakeClose) CloseAttempt(_ context.Context, in Input) (Closing, error) {
	f.asked = append(f.asked, f.env.Now())
	f.inputs = append(f.inputs, in)
	return f.answers[min(len(f.asked), len(f.answers))-1]()
}

func open(until time.Time) func() (Closing, error) {
	return func() (Closing, error) { return Closing{Until: until}, nil }
}

func closed(status string) func() (Closing, error) {
	return func() (Closing, error) { return Closing{Closed: true, Status: status}, nil }
}

// run runs KeepDeadline as the dispatcher starts it, with CloseAttempt
// answering answers, and returns its status and error.
func run(t *testing.T, answers ...func() (Closing, error)) (*fakeClose, string, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	f := &fakeClose{env: env, answers: answers}
	env.RegisterWorkflow(KeepDeadline)
	env.RegisterActivityWithOptions(f.CloseAttempt, activity.RegisterOptions{Name: ActivityCloseAttempt})
	in := Route(workflows.Subjects{}).Input(outbox.Item{Kind: outbox.KindAttempt, OrgID: "org_1", SubjectID: "att_1", Region: "eu"})
	env.ExecuteWorkflow(KeepDeadline, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	for _, got := range f.inputs {
		if want := (Input{OrgID: "org_1", AttemptID: "att_1", Region: "eu"}); got != want {
			t.Fatalf("CloseAttempt asked for %+v, want %+v", got, want)
		}
	}
	var status string
	err := env.GetWorkflowError()
	if err == nil {
		err = env.GetWorkflowResult(&status)
	}
	return f, status, err
}

// wantAsked checks that CloseAttempt was asked at each of at, by the
// workflow's clock, no earlier and at most a second later (the margin
// for the database's clock).
func wantAsked(t *testing.T, f *fakeClose, at ...time.Time) {
	t.Helper()
	if len(f.asked) != len(at) {
		t.Fatalf("CloseAttempt asked %d times (at %v), want %d", len(f.asked), f.asked, len(at))
	}
	for i, want := range at {
		if got := f.asked[i]; got.Before(want) || got.After(want.Add(time.Second)) {
			t.Errorf("call %d at %s, want at %s", i+1, got.Format(time.TimeOnly), want.Format(time.TimeOnly))
		}
	}
}

// An attempt closed when the workflow first looks (submitted by the
// student, deleted, or already past its deadline, which CloseAttempt then
// closes) ends the workflow at once with its status.
func TestKeepDeadlineEndsWhenTheAttemptIsClosed(t *testing.T) {
	for _, status := range []string{"submitted", "discarded", ""} {
		f, got, err := run(t, closed(status))
		if err != nil || got != status {
			t.Fatalf("status %q, %v; want %q", got, err, status)
		}
		wantAsked(t, f, start)
	}
}

// An open attempt is looked at again when its time is up, and closed
// then.
func TestKeepDeadlineSleepsUntilTheDeadline(t *testing.T) {
	until := start.Add(40 * time.Minute)
	f, status, err := run(t, open(until), closed("submitted"))
	if err != nil || status != "submitted" {
		t.Fatalf("status %q, %v", status, err)
	}
	wantAsked(t, f, start, until)
}

// A deadline extended while the workflow slept (an accommodation) is
// found when it wakes: it sleeps on until the new one rather than
// closing the attempt at the old one.
func TestKeepDeadlineFollowsAnExtendedDeadline(t *testing.T) {
	first, extended := start.Add(40*time.Minute), start.Add(70*time.Minute)
	f, status, err := run(t, open(first), open(extended), closed("discarded"))
	if err != nil || status != "discarded" {
		t.Fatalf("status %q, %v", status, err)
	}
	wantAsked(t, f, start, first, extended)
}

// The database's clock decides: an attempt it still finds open when the
// workflow's clock says the time is up is looked at again a second
// later, not at once in a loop.
func TestKeepDeadlineWaitsForTheDatabasesClock(t *testing.T) {
	f, status, err := run(t, open(start.Add(-time.Second)), closed("submitted"))
	if err != nil || status != "submitted" {
		t.Fatalf("status %q, %v", status, err)
	}
	wantAsked(t, f, start, start.Add(time.Second))
}

// A CloseAttempt that keeps failing (the database away for minutes) fails
// the workflow after its retries; the reconciler starts it again. A
// failure no retry can fix fails it at once.
func TestKeepDeadlineFailsWhenTheActivityFails(t *testing.T) {
	f, _, err := run(t, func() (Closing, error) { return Closing{}, errors.New("database unavailable") })
	if err == nil {
		t.Fatal("workflow succeeded")
	}
	if retries := workflows.DatabaseActivityOptions().RetryPolicy.MaximumAttempts; len(f.asked) != int(retries) {
		t.Errorf("CloseAttempt tried %d times, want %d", len(f.asked), retries)
	}
	f, _, err = run(t, func() (Closing, error) {
		return Closing{}, workflows.Permanent("a global attempt reached an eu worker", nil)
	})
	if err == nil || !workflows.IsPermanent(err) {
		t.Fatalf("workflow error %v, want the permanent failure", err)
	}
	if len(f.asked) != 1 {
		t.Errorf("CloseAttempt tried %d times, want once", len(f.asked))
	}
}
