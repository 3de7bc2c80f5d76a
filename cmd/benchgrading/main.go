// Command benchgrading measures grading throughput end to end: N results
// submitted through the HTTP API and graded on a Temporal dev server with
// the builtin provider, side by side with a no-op workflow baseline on the
// same server and worker, with the CPU time each costs in this process
// (API, dispatcher, worker and clients), in PostgreSQL and in the Temporal
// dev server, and the submit-to-graded latency. It then
// measures question regeneration latency (request to ready proposal, the
// builtin provider) against the no-op workflow's round trip, and
// answer-sheet scanning in pages per second (scanning.go).
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
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	gradingactivities "github.com/assessd/assessd/activities/grading"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/benchenv"
	"github.com/assessd/assessd/internal/testkit/benchload"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/workflows"
	"github.com/assessd/assessd/workflows/grading"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "benchgrading:", err)
		os.Exit(1)
	}
}

// noop is the baseline: a workflow that does nothing.
func noop(workflow.Context) error { return nil }

func run(ctx context.Context) (err error) {
	n := flag.Int("n", 800, "results to grade per round (a quarter more to warm up)")
	clients := flag.Int("c", 16, "concurrent submitting clients")
	rounds := flag.Int("rounds", 3, "rounds of the throughput comparison; the baseline and assessd take turns at going first")
	regenerations := flag.Int("r", 100, "question regenerations to time")
	sheets := flag.Int("sheets", 40, "answer sheets in the scanning benchmark's upload")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the last round's submit-and-grade run (API, dispatcher and worker) to this file")
	scanProfile := flag.String("scan-cpuprofile", "", "write a CPU profile of the scan end to end (upload to results) to this file")
	flag.Parse()
	env, err := benchenv.Start(ctx, "assessd_benchgrading", benchenv.WithTemporal())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Close()) }()
	db, tc := env.DB, env.Temporal

	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	defer srv.Close()
	// As deployed: serve's dispatcher is the fallback, the worker's own
	// starts its region's workflows (decision 0130).
	a, err := app.New(ctx, db, app.Config{BaseURL: srv.URL, Logger: env.Logger, Temporal: tc,
		Redis: redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}), RequestsPerMinute: benchenv.Unthrottled,
		Dispatch: workflows.DispatchOptions{Grace: 2 * time.Second}})
	if err != nil {
		return err
	}
	handler = a.Handler
	w, err := app.NewWorker(tc, db, app.WorkerConfig{Region: "global", Provider: ai.NewBuiltin(), Fetcher: media.NewFetcher(nil, media.Options{}),
		Metrics: gradingactivities.NewMetrics(a.Metrics.Registry, a.Metrics.Org)})
	if err != nil {
		return err
	}
	w.RegisterWorkflow(noop)
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()

	orgID, key, examID, questionID, studentID, err := seed(ctx, a)
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	a.Start(runCtx)
	go app.NewDispatcher(tc, db, a.Metrics.Registry, workflows.DispatchOptions{Region: "global"}).Run(runCtx)
	g := gradingRun{tc: tc, db: db, base: srv.URL, orgID: orgID, key: key, examID: examID, questionID: questionID,
		studentID: studentID, clients: *clients}
	// Warm-up: the dev server, the worker and the caches meet both kinds of
	// work before anything is measured.
	if _, _, err := g.noops(ctx, "noop-warmup", *n/4); err != nil {
		return err
	}
	if _, _, err := g.grade(ctx, *n/4, ""); err != nil {
		return err
	}
	if err := env.Analyze(ctx); err != nil {
		return err
	}
	fmt.Printf("%d results per round, %d submitters each waiting for its result to be graded, builtin provider, one global worker,\n"+
		"dev server on loopback; %d rounds, the baseline and assessd taking turns at going first\n\n", *n, *clients, *rounds)
	fmt.Printf("%-6s %-28s %10s %11s %11s %11s\n", "round", "target", "per second", "cpu go µs", "cpu pg µs", "cpu tmprl µs")
	row := func(round int, name string, rate float64, cpu benchload.Usage) {
		fmt.Printf("%-6d %-28s %10.1f %11d %11d %11d\n", round, name, rate, cpu.Process.Microseconds(), cpu.Postgres.Microseconds(), cpu.Temporal.Microseconds())
	}
	var ratios, costRatios []float64
	for round := range *rounds {
		profile := ""
		if round == *rounds-1 {
			profile = *cpuProfile
		}
		var baseRate, rate float64
		var baseCPU, cpu benchload.Usage
		noops := func() (err error) {
			baseRate, baseCPU, err = g.noops(ctx, fmt.Sprintf("noop-%d", round), *n)
			row(round+1, "no-op workflow (baseline)", baseRate, baseCPU)
			return err
		}
		grade := func() (err error) {
			rate, cpu, err = g.grade(ctx, *n, profile)
			row(round+1, "submit + grade (assessd)", rate, cpu)
			return err
		}
		first, second := noops, grade
		if round%2 == 1 {
			first, second = grade, noops
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
		ratios = append(ratios, rate/baseRate)
		costRatios = append(costRatios, float64(baseCPU.Total())/float64(cpu.Total()))
	}
	slices.Sort(ratios)
	slices.Sort(costRatios)
	fmt.Printf("\nratio assessd/baseline, median of %d rounds: %.2f (target >= 0.90)\n", *rounds, ratios[len(ratios)/2])
	// On a saturated machine throughput follows the CPU each item costs;
	// that ratio moves less from run to run than the rates themselves.
	fmt.Printf("CPU per no-op workflow / CPU per graded result (all three columns), median: %.2f: the ratio a saturated machine converges to\n",
		costRatios[len(costRatios)/2])
	latencies := g.latencies
	slices.Sort(latencies)
	fmt.Printf("submit-to-graded latency of every result, warm-up included: p50 %.0f ms, p99 %.0f ms (target p99 < 2000 ms)\n",
		ms(latencies[len(latencies)/2]), ms(latencies[len(latencies)*99/100]))
	dispatch, err := dispatchDelays(ctx, tc, db, orgID)
	if err != nil {
		return err
	}
	fmt.Printf("of which submit to workflow start (outbox dispatch): p50 %.0f ms, p99 %.0f ms\n",
		ms(dispatch[len(dispatch)/2]), ms(dispatch[len(dispatch)*99/100]))
	if err := regenerationBench(ctx, tc, db, srv.URL, key, orgID, examID, questionID, *regenerations); err != nil {
		return err
	}
	return benchScanning(ctx, a, srv.URL, orgID, key, *sheets, *scanProfile)
}

// gradingRun is what the throughput rounds share: the API, the database,
// the seeded exam, and the submit-to-graded latencies of every result
// graded so far (the warm-up's included).
type gradingRun struct {
	tc                                              client.Client
	db                                              *store.DB
	base, orgID, key, examID, questionID, studentID string
	clients                                         int
	submitted                                       int
	latencies                                       []time.Duration
}

// noops runs n no-op workflows and returns their rate and CPU per workflow.
func (g *gradingRun) noops(ctx context.Context, prefix string, n int) (float64, benchload.Usage, error) {
	before := benchload.ReadUsage()
	rate, _, err := baseline(ctx, g.tc, prefix, n, g.clients)
	return rate, benchload.ReadUsage().Per(before, n), err
}

// grade submits n results, waits until all are graded, and returns the
// rate and CPU per result, with a CPU profile written to profile when it
// is set.
func (g *gradingRun) grade(ctx context.Context, n int, profile string) (float64, benchload.Usage, error) {
	if profile != "" {
		stop, err := benchload.StartCPUProfile(profile)
		if err != nil {
			return 0, benchload.Usage{}, err
		}
		defer stop()
	}
	before, start := benchload.ReadUsage(), time.Now()
	if err := submitAll(g.base, g.key, g.examID, g.questionID, g.studentID, n, g.clients); err != nil {
		return 0, benchload.Usage{}, err
	}
	g.submitted += n
	latencies, err := waitFinished(ctx, g.db, g.orgID, g.submitted, `SELECT count(*) FILTER (WHERE status = 'grading'),
		coalesce(array_agg(extract(epoch FROM graded_at - submitted_at)) FILTER (WHERE status = 'graded'), '{}')
		FROM results WHERE org_id = app_org_id()`)
	if err != nil {
		return 0, benchload.Usage{}, err
	}
	g.latencies = latencies
	return float64(n) / time.Since(start).Seconds(), benchload.ReadUsage().Per(before, n), nil
}

// dispatchDelays returns, sorted, how long after its submission each
// result's grading workflow started: the outbox dispatcher's share of the
// submit-to-graded latency.
func dispatchDelays(ctx context.Context, tc client.Client, db *store.DB, orgID string) ([]time.Duration, error) {
	ctx = store.WithOrg(ctx, orgID)
	rows, err := db.Q(ctx).Query(ctx, `SELECT id, submitted_at FROM results WHERE org_id = app_org_id()`)
	if err != nil {
		return nil, err
	}
	type submitted struct {
		ID string
		At time.Time
	}
	results, err := pgx.CollectRows(rows, pgx.RowToStructByPos[submitted])
	if err != nil {
		return nil, err
	}
	route := grading.Route(workflows.Subjects{})
	delays := make([]time.Duration, len(results))
	for i, r := range results {
		desc, err := tc.DescribeWorkflowExecution(ctx, route.WorkflowID(r.ID), "")
		if err != nil {
			return nil, err
		}
		delays[i] = desc.GetWorkflowExecutionInfo().GetStartTime().AsTime().Sub(r.At)
	}
	slices.Sort(delays)
	return delays, nil
}

// regenerationBench times r regenerations of one question, one at a time
// (request to ready proposal, from the database's timestamps), against the
// round trip of as many no-op workflows on the same worker, one at a time.
func regenerationBench(ctx context.Context, tc client.Client, db *store.DB, base, key, orgID, examID, questionID string, r int) error {
	_, noops, err := baseline(ctx, tc, "noop-latency", r, 1)
	if err != nil {
		return err
	}
	var latencies []time.Duration
	for i := range r {
		if err := post(base+"/exams/"+examID+"/questions/"+questionID+"/regenerations", key, map[string]any{"instructions": "change the numbers"}, nil); err != nil {
			return err
		}
		if latencies, err = waitFinished(ctx, db, orgID, i+1, `SELECT count(*) FILTER (WHERE status = 'running'),
			coalesce(array_agg(extract(epoch FROM updated_at - created_at)) FILTER (WHERE status = 'ready'), '{}')
			FROM question_regenerations WHERE org_id = app_org_id()`); err != nil {
			return err
		}
	}
	slices.Sort(latencies)
	slices.Sort(noops)
	p50, p99 := latencies[len(latencies)/2], latencies[len(latencies)*99/100]
	b50, b99 := noops[len(noops)/2], noops[len(noops)*99/100]
	fmt.Printf("\n%d question regenerations, one at a time, builtin provider\n\n", r)
	fmt.Printf("%-34s %9s %9s\n", "latency", "p50 ms", "p99 ms")
	fmt.Printf("%-34s %9.0f %9.0f\n", "no-op workflow round trip", ms(b50), ms(b99))
	fmt.Printf("%-34s %9.0f %9.0f\n", "request to ready proposal", ms(p50), ms(p99))
	fmt.Printf("\nratio regeneration/baseline: p50 %.2f, p99 %.2f\n", float64(p50)/float64(b50), float64(p99)/float64(b99))
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// seed creates an organization with a teacher key, an essay exam and a
// student.
func seed(ctx context.Context, a *app.App) (orgID, key, examID, questionID, studentID string, err error) {
	org, err := a.Tenancy.CreateOrg(ctx, tenancy.NewOrg{Name: "Bench", Country: "US", Plan: tenancy.PlanPro})
	if err != nil {
		return
	}
	orgID = org.ID
	sys := tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	teacher, err := a.Tenancy.CreateUser(sys, tenancy.NewUser{Email: "t@bench.test", Name: "T", Role: tenancy.RoleTeacher})
	if err != nil {
		return
	}
	student, err := a.Tenancy.CreateUser(sys, tenancy.NewUser{Email: "s@bench.test", Name: "S", Role: tenancy.RoleStudent})
	if err != nil {
		return
	}
	if _, key, err = a.Tenancy.CreateAPIKey(sys, teacher.ID, "bench"); err != nil {
		return
	}
	exam, err := a.Assessment.CreateExam(sys, assessment.NewExam{Name: "Bench", Language: "en"})
	if err != nil {
		return
	}
	q, err := a.Assessment.CreateQuestion(sys, exam.ID, assessment.NewQuestion{Type: assessment.TypeEssay, Prompt: "Explain photosynthesis.",
		Points: 5, Config: map[string]any{"rubric": "light, chlorophyll", "minWords": 10.0}})
	return orgID, key, exam.ID, q.ID, student.ID, err
}

// baseline runs n no-op workflows with ids prefix-0..n-1, clients at a
// time, and returns their rate and each one's start-to-result time.
func baseline(ctx context.Context, c client.Client, prefix string, n, clients int) (float64, []time.Duration, error) {
	queue, err := workflows.RegionTaskQueue("global")
	if err != nil {
		return 0, nil, err
	}
	latencies := make([]time.Duration, n)
	start := time.Now()
	err = parallel(n, clients, func(i int) error {
		begin := time.Now()
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("%s-%d", prefix, i), TaskQueue: queue}, noop)
		if err != nil {
			return err
		}
		err = run.Get(ctx, nil)
		latencies[i] = time.Since(begin)
		return err
	})
	return float64(n) / time.Since(start).Seconds(), latencies, err
}

// submitAll submits n results from clients submitters, each waiting for
// its result to be graded before submitting the next, as the baseline's
// clients wait for each no-op workflow's result. A submitter waits as an
// API client does: reading the result with a long poll (decision 0135).
func submitAll(base, key, examID, questionID, studentID string, n, clients int) error {
	return parallel(n, clients, func(int) error {
		var r struct{ ID, Status string }
		err := post(base+"/exams/"+examID+"/results", key, map[string]any{"userId": studentID, "answers": []any{map[string]any{
			"questionId": questionID, "value": "Plants use light and chlorophyll to turn water and carbon dioxide into sugar and oxygen."}}}, &r)
		for deadline := time.Now().Add(time.Minute); err == nil && r.Status == assessment.StatusGrading; {
			if time.Now().After(deadline) {
				return fmt.Errorf("result %s not graded within a minute", r.ID)
			}
			var b []byte
			if b, err = call(http.MethodGet, base+"/results/"+r.ID+"?wait=30s", key, "", nil); err == nil {
				err = json.Unmarshal(b, &r)
			}
		}
		return err
	})
}

// post sends body as JSON with the API key and decodes a 200 answer into
// out (when not nil).
func post(url, key string, body, out any) error {
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		return fmt.Errorf("POST %s: %d %s", url, res.StatusCode, b)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(res.Body).Decode(out)
}

// waitFinished waits until query, run for the organization, counts no
// unfinished subject, and returns the durations (seconds) it lists for the
// finished ones: all n of them, or an error.
func waitFinished(ctx context.Context, db *store.DB, orgID string, n int, query string) ([]time.Duration, error) {
	ctx = store.WithOrg(ctx, orgID)
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		var grading int
		var latencies []float64
		err := db.Q(ctx).QueryRow(ctx, query).Scan(&grading, &latencies)
		if err != nil {
			return nil, err
		}
		if grading == 0 {
			if len(latencies) != n {
				return nil, fmt.Errorf("%d of %d finished successfully", len(latencies), n)
			}
			out := make([]time.Duration, len(latencies))
			for i, l := range latencies {
				out[i] = time.Duration(l * float64(time.Second))
			}
			return out, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, errors.New("not finished within 5 minutes")
}

// parallel runs fn(0..n-1) on clients goroutines and returns the first error.
func parallel(n, clients int, fn func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		next  int
		first error
	)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}
