// Command benchdeadlines measures the durable deadline when it matters
// most: N students' attempts of one assignment, started through the HTTP
// API with their responses saved, their deadline workflows asleep on a
// Temporal dev server; then the worker (and its region's dispatcher)
// stops, the deadline passes with no worker running, and a new worker
// starts. It prints the time from the worker's return until all N
// attempts are submitted, against its target, beside the same figure for
// as many workflows that only sleep until the deadline (the part that is
// Temporal's), with the CPU each cost in this process, in PostgreSQL and
// in Temporal (every local process of those names: on a shared machine
// they count the neighbours' work too).
//
// The deadline that passes is the attempts' own, the assignment's close,
// set seconds ahead when the assignment is made: a deadline moved earlier
// behind the workflows' backs would not wake them before the time they
// went to sleep for, and the product never moves one earlier.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"
	"golang.org/x/sync/errgroup"

	gradingactivities "github.com/assessd/assessd/activities/grading"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/delivery"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/testkit/benchenv"
	"github.com/assessd/assessd/internal/testkit/benchload"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/workflows"
	attemptworkflow "github.com/assessd/assessd/workflows/attempts"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "benchdeadlines:", err)
		os.Exit(1)
	}
}

// target is the longest the N attempts may take to be submitted once a
// worker is back.
const target = 30 * time.Second

// sleeper is the baseline: a workflow that sleeps until its deadline and
// ends, as KeepDeadline does without its database work.
func sleeper(ctx workflow.Context, until time.Time) error {
	return workflow.Sleep(ctx, until.Sub(workflow.Now(ctx)))
}

func run(ctx context.Context) (err error) {
	n := flag.Int("n", 500, fmt.Sprintf("attempts, one per student (at most %d, the users one assignment names)", delivery.MaxAssignees))
	window := flag.Duration("window", 30*time.Second, "from the start of a round to its deadline: the time to start every workflow and for it to go to sleep")
	clients := flag.Int("c", 16, "concurrent API clients")
	flag.Parse()
	if *n < 1 || *n > delivery.MaxAssignees {
		return fmt.Errorf("-n must be between 1 and %d", delivery.MaxAssignees)
	}
	env, err := benchenv.Start(ctx, "assessd_benchdeadlines", benchenv.WithTemporal())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Close()) }()
	a, err := env.StartApp(ctx, "http://127.0.0.1")
	if err != nil {
		return err
	}
	base, stopHTTP, err := benchload.Listen(a.Handler)
	if err != nil {
		return err
	}
	defer stopHTTP()
	s, err := seed(ctx, a, base, *n, *clients)
	if err != nil {
		return err
	}
	owner, err := pgx.Connect(ctx, env.URL)
	if err != nil {
		return err
	}
	defer owner.Close(ctx)
	o := outage{env: env, owner: owner, metrics: gradingactivities.NewMetrics(a.Metrics.Registry, a.Metrics.Org), window: *window, clients: *clients}
	queue, err := workflows.RegionTaskQueue("global")
	if err != nil {
		return err
	}
	baseline, err := o.round(ctx, func(closes time.Time) ([]string, error) {
		ids := make([]string, *n)
		return ids, each(*n, *clients, func(i int) error {
			ids[i] = fmt.Sprintf("sleeper-%d", i)
			_, err := env.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: ids[i], TaskQueue: queue}, sleeper, closes)
			return err
		})
	}, o.workflowsClosed)
	if err != nil {
		return err
	}
	attempts, err := o.round(ctx, func(closes time.Time) ([]string, error) { return s.startAttempts(closes, *clients) }, o.attemptsSubmitted)
	if err != nil {
		return err
	}
	fmt.Printf("%d attempts of one assignment (3 rule-scored questions, every response saved), one global worker with its region's\n"+
		"dispatcher, dev server and PostgreSQL on loopback; the worker stopped once every workflow slept and started again\n"+
		"once the deadline had passed (%.1f s later); baseline: as many workflows that sleep until the deadline and end\n\n",
		*n, attempts.down.Seconds())
	fmt.Printf("%-40s %8s %8s %8s %11s %11s %11s\n", "from the workers' return, seconds", "first", "median", "all", "cpu go µs", "cpu pg µs", "cpu tmprl µs")
	for _, r := range []struct {
		name string
		r    result
	}{{"sleeping workflows end (baseline)", baseline}, {"attempts submitted (assessd)", attempts}} {
		fmt.Printf("%-40s %8.2f %8.2f %8.2f %11d %11d %11d\n", r.name, r.r.after[0].Seconds(), r.r.after[len(r.r.after)/2].Seconds(),
			r.r.all().Seconds(), r.r.cpu.Process.Microseconds(), r.r.cpu.Postgres.Microseconds(), r.r.cpu.Temporal.Microseconds())
	}
	fmt.Printf("\n%d attempts whose deadline passes while all workers are stopped: time from the workers' return until all are\n"+
		"submitted: %.2f s (target < %.0f s)\n", *n, attempts.all().Seconds(), target.Seconds())
	if attempts.all() >= target {
		return fmt.Errorf("all %d attempts submitted %.1f s after the workers' return, target %v", *n, attempts.all().Seconds(), target)
	}
	return nil
}

// outage runs rounds of workflows whose deadline passes while no worker
// runs.
type outage struct {
	env     *benchenv.Env
	owner   *pgx.Conn
	metrics *gradingactivities.Metrics
	window  time.Duration
	clients int
}

// result is what a round measured: how long the worker was down, how long
// after its return each workflow's work was done (shortest first), and the
// CPU each cost from the return until all were done.
type result struct {
	down  time.Duration
	after []time.Duration
	cpu   benchload.Usage
}

func (r result) all() time.Duration { return r.after[len(r.after)-1] }

// round starts a worker, has start launch the round's workflows (due at
// closes; it returns their ids), stops the worker once every one sleeps,
// starts a new one once the deadline is past by the database's clock, and
// waits with done, which returns when each workflow's work was done.
func (o *outage) round(ctx context.Context, start func(closes time.Time) ([]string, error),
	done func(ctx context.Context, ids []string) ([]time.Time, error)) (result, error) {
	stop, err := o.startWorker()
	if err != nil {
		return result{}, err
	}
	closes := time.Now().Add(o.window)
	ids, err := start(closes)
	if err == nil {
		err = o.asleep(ctx, ids, closes)
	}
	stop()
	if err != nil {
		return result{}, err
	}
	stopped := time.Now()
	// Every timer fires while no worker runs: the deadline is past by
	// more than the workflows' margin.
	if err := o.waitFor(ctx, 2*time.Minute, `SELECT now() > $1::timestamptz + interval '1 second'`, closes); err != nil {
		return result{}, err
	}
	back, before := time.Now(), benchload.ReadUsage()
	if stop, err = o.startWorker(); err != nil {
		return result{}, err
	}
	defer stop()
	at, err := done(ctx, ids)
	if err != nil {
		return result{}, err
	}
	r := result{down: back.Sub(stopped), cpu: benchload.ReadUsage().Per(before, len(ids))}
	for _, t := range at {
		r.after = append(r.after, t.Sub(back))
	}
	slices.Sort(r.after)
	return r, nil
}

// attemptsSubmitted waits until every attempt is submitted by the system
// and returns when each was.
func (o *outage) attemptsSubmitted(ctx context.Context, ids []string) ([]time.Time, error) {
	if err := o.waitFor(ctx, 3*time.Minute, `SELECT count(*) = $1 FROM attempts WHERE status = 'submitted' AND submitted_by = 'system'`, len(ids)); err != nil {
		return nil, err
	}
	rows, err := o.owner.Query(ctx, `SELECT submitted_at FROM attempts`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[time.Time])
}

// workflowsClosed waits until every workflow is completed and returns when
// each was, by the server's clock.
func (o *outage) workflowsClosed(ctx context.Context, ids []string) ([]time.Time, error) {
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		count, err := o.env.Temporal.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Query: "WorkflowType = 'sleeper' AND ExecutionStatus = 'Completed'"})
		if err != nil {
			return nil, err
		}
		if count.GetCount() >= int64(len(ids)) {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d workflows completed within 3 minutes", count.GetCount(), len(ids))
		}
	}
	at := make([]time.Time, len(ids))
	return at, each(len(ids), o.clients, func(i int) error {
		desc, err := o.env.Temporal.DescribeWorkflowExecution(ctx, ids[i], "")
		at[i] = desc.GetWorkflowExecutionInfo().GetCloseTime().AsTime()
		return err
	})
}

// school is the seeded organization: a teacher's API key, an exam of three
// rule-scored questions and its students.
type school struct {
	base, key, examID string
	questions         []string
	students          []string
}

func seed(ctx context.Context, a *app.App, base string, n, clients int) (*school, error) {
	org, err := a.Tenancy.CreateOrg(ctx, tenancy.NewOrg{Name: "Bench", Country: "US", Plan: tenancy.PlanEnterprise})
	if err != nil {
		return nil, err
	}
	sys := tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	teacher, err := a.Tenancy.CreateUser(sys, tenancy.NewUser{Email: "t@bench.test", Name: "T", Role: tenancy.RoleTeacher})
	if err != nil {
		return nil, err
	}
	s := &school{base: base, students: make([]string, n)}
	if _, s.key, err = a.Tenancy.CreateAPIKey(sys, teacher.ID, "bench"); err != nil {
		return nil, err
	}
	exam, err := a.Assessment.CreateExam(sys, assessment.NewExam{Name: "Fractions", Language: "en"})
	if err != nil {
		return nil, err
	}
	s.examID = exam.ID
	for _, q := range []assessment.NewQuestion{
		{Type: assessment.TypeMultipleChoice, Prompt: "Which fraction equals 0.5?", Points: 2, Config: map[string]any{"options": []any{
			map[string]any{"id": "a", "text": "1/3"}, map[string]any{"id": "b", "text": "1/2", "correct": true}}}},
		{Type: assessment.TypeTrueFalse, Prompt: "2/4 = 1/2.", Config: map[string]any{"correct": true}},
		{Type: assessment.TypeNumeric, Prompt: "3/4 as a decimal?", Config: map[string]any{"correct": 0.75}},
	} {
		created, err := a.Assessment.CreateQuestion(sys, exam.ID, q)
		if err != nil {
			return nil, err
		}
		s.questions = append(s.questions, created.ID)
	}
	return s, each(n, clients, func(i int) error {
		u, err := a.Tenancy.CreateUser(sys, tenancy.NewUser{Email: fmt.Sprintf("s%d@bench.test", i), Name: "S", Role: tenancy.RoleStudent})
		s.students[i] = u.ID
		return err
	})
}

// startAttempts gives the exam to every student until closes, with no
// time limit of its own (the deadline is the close) and no grace, starts
// each student's attempt (as staff may) and saves its responses; it
// returns the attempts' workflow ids.
func (s *school) startAttempts(closes time.Time, clients int) ([]string, error) {
	var asg struct{ ID string }
	if err := s.call(http.MethodPost, "/assignments", map[string]any{"examId": s.examID, "userIds": s.students,
		"opensAt": time.Now().Add(-time.Minute).Format(time.RFC3339Nano), "closesAt": closes.Format(time.RFC3339Nano),
		"graceSeconds": 0, "overdue": delivery.OverdueAutosubmit}, &asg); err != nil {
		return nil, err
	}
	answers := []any{"b", true, 0.75}
	ids := make([]string, len(s.students))
	return ids, each(len(s.students), clients, func(i int) error {
		var at struct{ ID string }
		if err := s.call(http.MethodPost, "/assignments/"+asg.ID+"/attempts", map[string]any{"userId": s.students[i]}, &at); err != nil {
			return err
		}
		ids[i] = attemptworkflow.Route(workflows.Subjects{}).WorkflowID(at.ID)
		for j, q := range s.questions {
			if err := s.call(http.MethodPut, "/attempts/"+at.ID+"/responses/"+q, map[string]any{"value": answers[j]}, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// call sends a JSON request with the teacher's key and decodes a 200's
// body into out (when not nil).
func (s *school) call(method, path string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(method, s.base+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// startWorker starts a worker process's worth of the global region: its
// worker, with the baseline's workflow, and its regional dispatcher
// (decision 0130), which it returns a function to stop.
func (o *outage) startWorker() (stop func(), err error) {
	w, err := app.NewWorker(o.env.Temporal, o.env.DB, app.WorkerConfig{Region: "global", Provider: ai.NewBuiltin(),
		Fetcher: media.NewFetcher(nil, media.Options{}), Metrics: o.metrics})
	if err != nil {
		return nil, err
	}
	w.RegisterWorkflow(sleeper)
	if err := w.Start(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		app.NewDispatcher(o.env.Temporal, o.env.DB, nil, workflows.DispatchOptions{Region: "global"}).Run(ctx)
	}()
	return func() {
		cancel()
		<-done
		w.Stop()
	}, nil
}

// asleep waits until every workflow sleeps until its deadline, which must
// be before closes.
func (o *outage) asleep(ctx context.Context, ids []string, closes time.Time) error {
	return each(len(ids), o.clients, func(i int) error {
		for {
			if time.Now().After(closes) {
				return fmt.Errorf("workflow %s did not sleep before the deadline; raise -window", ids[i])
			}
			iter := o.env.Temporal.GetWorkflowHistory(ctx, ids[i], "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for iter.HasNext() {
				e, err := iter.Next()
				if err != nil {
					break // not started yet
				}
				if e.GetEventType() == enums.EVENT_TYPE_TIMER_STARTED {
					return nil
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// waitFor polls query (one boolean) as the schema owner until it is true,
// for up to within.
func (o *outage) waitFor(ctx context.Context, within time.Duration, query string, args ...any) error {
	for deadline := time.Now().Add(within); ; time.Sleep(20 * time.Millisecond) {
		var ok bool
		if err := o.owner.QueryRow(ctx, query, args...).Scan(&ok); err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v: %s", within, query)
		}
	}
}

// each runs fn for 0..n-1, clients at a time, and returns the first
// error.
func each(n, clients int, fn func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(clients)
	for i := range n {
		g.Go(func() error { return fn(i) })
	}
	return g.Wait()
}
