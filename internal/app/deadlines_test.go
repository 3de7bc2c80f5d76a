package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	gradingactivities "github.com/assessd/assessd/activities/grading"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/devenv"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/internal/testkit/devenvtest"
	"github.com/assessd/assessd/internal/testkit/eventually"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/workflows"
	attemptworkflow "github.com/assessd/assessd/workflows/attempts"
)

// deadlineEnv is an assessd whose attempts' deadline workflows run on the
// Temporal dev server at address: started by an outbox dispatcher and run
// by a worker per region, as internal/app wires them, each of which the
// test stops and starts as processes come and go.
type deadlineEnv struct {
	*env
	url     string
	address string
	// temporal is the test's own client, to read the workflows.
	temporal client.Client
	// dispatch are the dispatcher's options.
	dispatch workflows.DispatchOptions
	// workers and dispatcher stop what runs; nil when stopped.
	workers, dispatcher func()
}

func newDeadlineEnv(t *testing.T, address string) *deadlineEnv {
	t.Helper()
	tc, err := devenv.DialTemporal(address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	url := storetest.NewURL(t)
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	// The app itself starts no workflow: the dispatcher is the test's.
	// Its sweep is short in case a notification is missed; its
	// reconciler, which restarts a lost workflow only after two quiet
	// minutes, plays no part unless a test asks.
	d := &deadlineEnv{env: apptest.NewOn(t, db, nil), url: url, address: address, temporal: tc,
		dispatch: workflows.DispatchOptions{Sweep: 200 * time.Millisecond}}
	t.Cleanup(func() { d.stopDispatcher(); d.stopWorkers() })
	d.startDispatcher()
	d.startWorkers()
	return d
}

// sql runs a statement as the schema owner.
func (d *deadlineEnv) sql(query string, args ...any) {
	d.T.Helper()
	conn, err := pgx.Connect(context.Background(), d.url)
	if err != nil {
		d.T.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), query, args...); err != nil {
		d.T.Fatal(err)
	}
}

// startWorkers starts a worker process's worth: both regions' workers on a
// client of their own.
func (d *deadlineEnv) startWorkers() {
	d.T.Helper()
	wc, err := devenv.DialTemporal(d.address)
	if err != nil {
		d.T.Fatal(err)
	}
	var stops []func()
	for _, region := range []string{"eu", "global"} {
		w, err := app.NewWorker(wc, d.DB, app.WorkerConfig{Region: region, Provider: ai.NewBuiltin(), Fetcher: media.NewFetcher(nil, media.Options{}),
			Metrics: gradingactivities.NewMetrics(prometheus.NewRegistry(), func(s string) string { return s })})
		if err != nil {
			d.T.Fatal(err)
		}
		if err := w.Start(); err != nil {
			d.T.Fatal(err)
		}
		stops = append(stops, w.Stop)
	}
	d.workers = func() {
		for _, stop := range stops {
			stop()
		}
		wc.Close()
	}
}

func (d *deadlineEnv) stopWorkers() {
	if d.workers != nil {
		d.workers()
		d.workers = nil
	}
}

// startDispatcher starts serve's outbox dispatcher, its metrics on the
// app's.
func (d *deadlineEnv) startDispatcher() {
	ctx, cancel := context.WithCancel(context.Background())
	disp := app.NewDispatcher(d.temporal, d.DB, d.App.Metrics.Registry, d.dispatch)
	done := make(chan struct{})
	go func() { defer close(done); disp.Run(ctx) }()
	d.dispatcher = func() { cancel(); <-done }
}

func (d *deadlineEnv) stopDispatcher() {
	if d.dispatcher != nil {
		d.dispatcher()
		d.dispatcher = nil
	}
}

// room is an organization with an exam of one rule-scored question.
type room struct {
	d *deadlineEnv
	// e is d's env failing t, the (sub)test the room is for.
	e          *env
	t          *testing.T
	tn         tenant
	examID     string
	questionID string
}

func (d *deadlineEnv) newRoom(t *testing.T) room {
	t.Helper()
	e := *d.env
	e.T = t
	r := room{d: d, e: &e, t: t, tn: e.NewTenant("US", tenancy.PlanPro)}
	staff := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(r.tn.Org.ID))
	exam, err := d.App.Assessment.CreateExam(staff, assessment.NewExam{Name: "Fractions", Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := d.App.Assessment.CreateQuestion(staff, exam.ID, assessment.NewQuestion{Type: assessment.TypeMultipleChoice,
		Prompt: "Which fraction equals 0.5?", Points: 2, Config: map[string]any{"options": []any{
			map[string]any{"id": "a", "text": "1/3"}, map[string]any{"id": "b", "text": "1/2", "correct": true}}}})
	if err != nil {
		t.Fatal(err)
	}
	r.examID, r.questionID = exam.ID, q.ID
	return r
}

// assign gives the exam to the room's student until closes, without a
// time limit of its own: the attempt's deadline is the close, which the
// workflow learns when it first looks, so a test's deadline can be
// seconds away. (The shortest time limit is a minute, and a deadline
// moved earlier behind a sleeping workflow's back would not wake it: the
// product only ever moves deadlines later.)
func (r room) assign(closes time.Time, grace int, overdue string) string {
	r.t.Helper()
	a := r.e.Do("POST", "/assignments", r.tn.Keys[tenancy.RoleTeacher], map[string]any{"examId": r.examID,
		"userIds": []string{r.tn.Users[tenancy.RoleStudent].ID}, "opensAt": time.Now().Add(-time.Minute).Format(time.RFC3339Nano),
		"closesAt": closes.Format(time.RFC3339Nano), "graceSeconds": grace, "overdue": overdue}).Must(r.t, 200)
	return apptest.Str(a.Body, "id")
}

// start starts the student's attempt and saves the correct answer.
func (r room) start(assignmentID string) string {
	r.t.Helper()
	student := r.tn.Keys[tenancy.RoleStudent]
	a := r.e.Do("POST", "/assignments/"+assignmentID+"/attempts", student, map[string]any{}).Must(r.t, 200)
	id := apptest.Str(a.Body, "id")
	r.e.Do("PUT", "/attempts/"+id+"/responses/"+r.questionID, student, map[string]any{"value": "b"}).Must(r.t, 200)
	return id
}

// attempt reads the attempt as its teacher.
func (r room) attempt(id string) map[string]any {
	r.t.Helper()
	return r.e.Do("GET", "/attempts/"+id, r.tn.Keys[tenancy.RoleTeacher], nil).Must(r.t, 200).Body
}

// results lists the results of the room's exam.
func (r room) results() []map[string]any {
	r.t.Helper()
	return apptest.Items(r.e.Do("GET", "/exams/"+r.examID+"/results", r.tn.Keys[tenancy.RoleTeacher], nil).Must(r.t, 200).Body, "results")
}

// closed waits up to within for the attempt to be closed and returns it.
func (r room) closed(id string, within time.Duration) map[string]any {
	r.t.Helper()
	var a map[string]any
	eventually.Succeeds(r.t, within, func() error {
		if a = r.attempt(id); apptest.Str(a, "status") == "in_progress" {
			return fmt.Errorf("attempt %s still in progress", id)
		}
		return nil
	})
	return a
}

// openPast waits until the database's clock is past when, checking all
// along that the attempt stays in progress.
func (r room) openPast(id string, when func(attempt map[string]any) time.Time) {
	r.t.Helper()
	eventually.Succeeds(r.t, 30*time.Second, func() error {
		a := r.attempt(id)
		if apptest.Str(a, "status") != "in_progress" {
			r.t.Fatalf("attempt closed before its time: %v", a)
		}
		if now, until := at(r.t, a, "serverTime"), when(a); now.Before(until) {
			return fmt.Errorf("server time %s, waiting for %s", now.Format(time.TimeOnly), until.Format(time.TimeOnly))
		}
		return nil
	})
}

// closes is when the attempt stops taking saves: deadline + grace.
func closes(t *testing.T, a map[string]any) time.Time {
	t.Helper()
	return at(t, a, "deadline").Add(time.Duration(apptest.Num(a, "graceSeconds")) * time.Second)
}

// pastClose waits until the database's clock is past the attempt's
// deadline + grace by more than the workflow's margin, checking that
// nothing closed it meanwhile.
func (r room) pastClose(id string) {
	r.t.Helper()
	r.openPast(id, func(a map[string]any) time.Time { return closes(r.t, a).Add(2 * time.Second) })
}

// submittedBySystem checks that the attempt was submitted by the system
// at or after its deadline + grace, with one result made of the saved
// answer.
func (r room) submittedBySystem(a map[string]any) {
	r.t.Helper()
	if apptest.Str(a, "status") != "submitted" || apptest.Str(a, "submittedBy") != "system" || at(r.t, a, "submittedAt").Before(closes(r.t, a)) {
		r.t.Fatalf("attempt %v, want submitted by the system at %s or later", a, closes(r.t, a).Format(time.TimeOnly))
	}
	results := r.results()
	if len(results) != 1 || apptest.Str(results[0], "id") != apptest.Str(a, "resultId") || apptest.Str(results[0], "source") != "attempt" ||
		apptest.Str(results[0], "attemptId") != apptest.Str(a, "id") || apptest.Num(results[0], "score") != 2 {
		r.t.Fatalf("results %v, want the attempt's one result, scored 2", results)
	}
}

// workflowSubmitted checks that the attempt's workflow submitted it and
// ended.
func (r room) workflowSubmitted(a map[string]any) {
	r.t.Helper()
	r.submittedBySystem(a)
	if status := r.workflowResult(apptest.Str(a, "id")); status != "submitted" {
		r.t.Fatalf("workflow ended with %q", status)
	}
}

// workflowResult waits for the attempt's workflow to end and returns the
// status it ended with.
func (r room) workflowResult(id string) string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var status string
	if err := r.d.temporal.GetWorkflow(ctx, attemptworkflow.Route(workflows.Subjects{}).WorkflowID(id), "").Get(ctx, &status); err != nil {
		r.t.Fatal(err)
	}
	return status
}

// timers counts the timers the attempt's workflow started: one per
// sleep; an error while the workflow is not started yet.
func (r room) timers(id string) (int, error) {
	iter := r.d.temporal.GetWorkflowHistory(context.Background(), attemptworkflow.Route(workflows.Subjects{}).WorkflowID(id), "", false,
		enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			return 0, err
		}
		if e.GetEventType() == enums.EVENT_TYPE_TIMER_STARTED {
			n++
		}
	}
	return n, nil
}

// sleeping waits until the attempt's workflow sleeps until its deadline.
func (r room) sleeping(id string) {
	r.t.Helper()
	eventually.Succeeds(r.t, 30*time.Second, func() error {
		n, err := r.timers(id)
		if err == nil && n == 0 {
			err = fmt.Errorf("the workflow of %s does not sleep yet", id)
		}
		return err
	})
}

// at reads a timestamp field.
func at(t *testing.T, m map[string]any, k string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, apptest.Str(m, k))
	if err != nil {
		t.Fatalf("%s: %v in %v", k, err, m)
	}
	return v
}

// TestAttemptDeadlines: an attempt whose deadline passes is closed by its
// workflow, started through the outbox and run by its region's worker:
// submitted by the system with what was saved, exactly once, or
// discarded; one the student submitted first is left as it is; an
// accommodation given while the workflow slept moves the close to the new
// deadline.
func TestAttemptDeadlines(t *testing.T) {
	t.Parallel()
	d := newDeadlineEnv(t, devenvtest.Server(t).Address)
	t.Run("submitted by the system", func(t *testing.T) {
		t.Parallel()
		r := d.newRoom(t)
		id := r.start(r.assign(time.Now().Add(3*time.Second), 1, "autosubmit"))
		a := r.closed(id, 30*time.Second)
		r.workflowSubmitted(a)
	})
	t.Run("submitted by the student first", func(t *testing.T) {
		t.Parallel()
		r := d.newRoom(t)
		id := r.start(r.assign(time.Now().Add(3*time.Second), 0, "autosubmit"))
		r.sleeping(id)
		sub := r.e.Do("POST", "/attempts/"+id+"/submit", r.tn.Keys[tenancy.RoleStudent], map[string]any{}).Must(t, 200).Body
		// The workflow wakes at the deadline, finds the attempt submitted
		// and ends.
		if status := r.workflowResult(id); status != "submitted" {
			t.Fatalf("workflow ended with %q", status)
		}
		a := r.attempt(id)
		if apptest.Str(a, "submittedBy") != "student" || apptest.Str(a, "resultId") != apptest.Str(sub, "resultId") || apptest.Str(a, "submittedAt") != apptest.Str(sub, "submittedAt") {
			t.Fatalf("attempt %v after its deadline, want it as the student submitted it: %v", a, sub)
		}
		if results := r.results(); len(results) != 1 {
			t.Fatalf("%d results, want the student's one", len(results))
		}
	})
	t.Run("discarded", func(t *testing.T) {
		t.Parallel()
		r := d.newRoom(t)
		id := r.start(r.assign(time.Now().Add(3*time.Second), 0, "discard"))
		a := r.closed(id, 30*time.Second)
		if apptest.Str(a, "status") != "discarded" || apptest.Str(a, "submittedBy") != "system" || apptest.Str(a, "resultId") != "" ||
			at(t, a, "submittedAt").Before(closes(t, a)) {
			t.Fatalf("attempt %v, want discarded by the system at its deadline", a)
		}
		if results := r.results(); len(results) != 0 {
			t.Fatalf("results %v of a discarded attempt", results)
		}
		if status := r.workflowResult(id); status != "discarded" {
			t.Fatalf("workflow ended with %q", status)
		}
	})
	t.Run("extended while its workflow sleeps", func(t *testing.T) {
		t.Parallel()
		r := d.newRoom(t)
		// The first deadline leaves time to see the workflow asleep and to
		// extend it before it passes, on a busy machine.
		first := time.Now().Add(10 * time.Second).Truncate(time.Millisecond)
		asg := r.assign(first, 0, "autosubmit")
		id := r.start(asg)
		r.sleeping(id)
		extended := first.Add(4 * time.Second)
		r.e.Do("PUT", "/assignments/"+asg+"/accommodations/"+r.tn.Users[tenancy.RoleStudent].ID, r.tn.Keys[tenancy.RoleTeacher],
			map[string]any{"closesAt": extended.Format(time.RFC3339Nano)}).Must(t, 200)
		a := r.attempt(id)
		if got := at(t, a, "deadline"); !got.Equal(extended.Truncate(time.Microsecond)) || !at(t, a, "serverTime").Before(first) {
			t.Fatalf("deadline %s at %s, want %s, set before %s", got, apptest.Str(a, "serverTime"), extended, first)
		}
		// Past the first deadline the attempt is open and takes saves.
		r.openPast(id, func(map[string]any) time.Time { return first.Add(2 * time.Second) })
		r.e.Do("PUT", "/attempts/"+id+"/responses/"+r.questionID, r.tn.Keys[tenancy.RoleStudent], map[string]any{"value": "b"}).Must(t, 200)
		a = r.closed(id, 30*time.Second)
		r.workflowSubmitted(a)
		if n, err := r.timers(id); err != nil || n != 2 {
			t.Fatalf("the workflow slept %d times (%v), want twice: until the first deadline, then until the extended one", n, err)
		}
	})
}

// TestAttemptDeadlinePassesWhileWorkersAreDown: no worker and no
// dispatcher runs at the deadline; once a worker is back the attempt is
// submitted within seconds, as is one started while they were down, whose
// workflow first runs after its deadline.
func TestAttemptDeadlinePassesWhileWorkersAreDown(t *testing.T) {
	t.Parallel()
	d := newDeadlineEnv(t, devenvtest.Server(t).Address)
	r, late := d.newRoom(t), d.newRoom(t)
	id := r.start(r.assign(time.Now().Add(4*time.Second), 0, "autosubmit"))
	r.sleeping(id)
	d.stopWorkers()
	d.stopDispatcher()
	// Started while everything is down: the outbox row waits, and the
	// deadline passes before the workflow exists.
	lateID := late.start(late.assign(time.Now().Add(time.Hour), 0, "autosubmit"))
	d.sql(`UPDATE attempts SET deadline = now() - interval '1 second', grace_seconds = 0 WHERE id = $1`, lateID)
	r.pastClose(id)
	late.pastClose(lateID)

	back := time.Now()
	d.startWorkers()
	d.startDispatcher()
	a := r.closed(id, 30*time.Second)
	b := late.closed(lateID, 30*time.Second)
	took := time.Since(back)
	t.Logf("both submitted %v after the workers' return", took)
	r.workflowSubmitted(a)
	late.workflowSubmitted(b)
	if took > 15*time.Second {
		t.Fatalf("submitted %v after the workers' return, want within seconds", took)
	}
}

// TestAttemptDeadlinePassesWhileTemporalIsDown: the Temporal server is
// stopped before the deadline and started again, on its state, after it;
// the worker and the dispatcher run throughout. The timer fires when the
// server is back and the attempt is submitted then.
func TestAttemptDeadlinePassesWhileTemporalIsDown(t *testing.T) {
	t.Parallel()
	server := devenvtest.StartPersistent(t)
	d := newDeadlineEnv(t, server.Address)
	r := d.newRoom(t)
	id := r.start(r.assign(time.Now().Add(4*time.Second), 0, "autosubmit"))
	r.sleeping(id)
	server.Stop()
	r.pastClose(id)

	server.Start()
	back := time.Now()
	a := r.closed(id, time.Minute)
	t.Logf("submitted %v after Temporal's return", time.Since(back))
	r.workflowSubmitted(a)
}

// TestAbandonedAttemptIsClosedByTheReconciler: an attempt whose workflow
// the reconciler gave up on (it ended without closing the attempt more
// often than it may be restarted) is left open until its time is up, and
// then closed by the reconciler itself, at the pace of its checks.
func TestAbandonedAttemptIsClosedByTheReconciler(t *testing.T) {
	t.Parallel()
	d := newDeadlineEnv(t, devenvtest.Server(t).Address)
	d.stopDispatcher()
	d.dispatch = workflows.DispatchOptions{Sweep: 200 * time.Millisecond, Reconcile: 200 * time.Millisecond, Quiet: 500 * time.Millisecond,
		SleeperQuiet: 500 * time.Millisecond, MaxRestarts: 1}
	d.startDispatcher()
	r := d.newRoom(t)
	// The deadline leaves time for two runs to end and the abandonment
	// before it, on a busy machine.
	id := r.start(r.assign(time.Now().Add(15*time.Second), 0, "autosubmit"))
	ctx := context.Background()
	workflowID := attemptworkflow.Route(workflows.Subjects{}).WorkflowID(id)
	// The workflow ends without closing the attempt, is restarted once and
	// ends again.
	var run string
	for range 2 {
		eventually.Succeeds(t, 30*time.Second, func() error {
			desc, err := d.temporal.DescribeWorkflowExecution(ctx, workflowID, "")
			if err != nil {
				return err
			}
			info := desc.GetWorkflowExecutionInfo()
			if info.GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING || info.GetExecution().GetRunId() == run {
				return fmt.Errorf("no new run of %s", workflowID)
			}
			run = info.GetExecution().GetRunId()
			return nil
		})
		if err := d.temporal.TerminateWorkflow(ctx, workflowID, run, "the workflow ends without closing the attempt"); err != nil {
			t.Fatal(err)
		}
	}
	waitMetric(t, d.env, `assessd_outbox_dispatches_total{kind="attempt",outcome="abandoned"}`, func(v float64) bool { return v >= 1 })
	if a := r.attempt(id); apptest.Str(a, "status") != "in_progress" || !at(t, a, "serverTime").Before(closes(t, a)) {
		t.Fatalf("attempt %v once abandoned, want it in progress until its deadline", a)
	}
	a := r.closed(id, 30*time.Second)
	r.submittedBySystem(a)
	desc, err := d.temporal.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := desc.GetWorkflowExecutionInfo().GetExecution().GetRunId(); got != run {
		t.Fatalf("a third run %s of the abandoned attempt's workflow", got)
	}
}
