package app_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"

	gradingactivities "github.com/assessd/assessd/activities/grading"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/devenv"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/internal/testkit/devenvtest"
	"github.com/assessd/assessd/internal/testkit/eventually"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/workflows"
)

// countingProvider is the builtin provider, counting its calls.
type countingProvider struct {
	ai.Provider
	grades, generations atomic.Int32
}

func (p *countingProvider) Grade(ctx context.Context, req ai.GradeRequest) (ai.Grade, error) {
	p.grades.Add(1)
	return p.Provider.Grade(ctx, req)
}

func (p *countingProvider) GenerateQuestions(ctx context.Context, req ai.GenerateRequest) ([]ai.GeneratedQuestion, error) {
	p.generations.Add(1)
	return p.Provider.GenerateQuestions(ctx, req)
}

// TestWorkflowStartsSurviveATemporalOutage submits a result needing AI
// grading and requests an exam generation while Temporal is down: the API
// answers, both wait in the outbox, and once a dev server is back on the
// same address the app's client reconnects and both finish, each graded or
// generated exactly once. Then a workflow is lost with its server (a new,
// empty dev server replaces it) and the reconciler starts it again.
func TestWorkflowStartsSurviveATemporalOutage(t *testing.T) {
	t.Parallel()
	temporal := devenvtest.StartRestartable(t)
	// Lazy, like serve: no connection is needed to build the app.
	tc, err := client.NewLazyClient(client.Options{HostPort: temporal.Address})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)

	e := apptest.NewWithConfig(t, func(c *app.Config) {
		c.Temporal = tc
		c.Dispatch = workflows.DispatchOptions{Sweep: 200 * time.Millisecond, StartTimeout: 2 * time.Second, MaxDelay: time.Second,
			Reconcile: 500 * time.Millisecond, Quiet: time.Second}
	})
	db, a := e.DB, e.App

	tn := e.NewTenant("US", tenancy.PlanPro)
	teacher := tn.Keys[tenancy.RoleTeacher]
	staff := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.Org.ID))
	exam, err := a.Assessment.CreateExam(staff, assessment.NewExam{Name: "Essays", Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	essay, err := a.Assessment.CreateQuestion(staff, exam.ID, assessment.NewQuestion{Type: assessment.TypeEssay,
		Prompt: "Describe photosynthesis.", Points: 4, Config: map[string]any{"rubric": "light chlorophyll sugar"}})
	if err != nil {
		t.Fatal(err)
	}
	submit := func() string {
		t.Helper()
		r := e.Do("POST", "/exams/"+exam.ID+"/results", teacher, map[string]any{"userId": tn.Users[tenancy.RoleStudent].ID,
			"answers": []any{map[string]any{"questionId": essay.ID, "value": "Plants use light and chlorophyll to make sugar."}}}).Must(t, 200)
		if r.Body["status"] != "grading" {
			t.Fatalf("submitted result %s", r.Raw)
		}
		return r.Body["id"].(string)
	}
	provider := &countingProvider{Provider: ai.NewBuiltin()}
	startWorkers := func() func() {
		t.Helper()
		wc, err := devenv.DialTemporal(temporal.Address)
		if err != nil {
			t.Fatal(err)
		}
		var stops []func()
		for _, region := range []string{"eu", "global"} {
			w, err := app.NewWorker(wc, db, app.WorkerConfig{Region: region, Provider: provider, Fetcher: media.NewFetcher(nil, media.Options{}),
				Metrics: gradingactivities.NewMetrics(prometheus.NewRegistry(), func(s string) string { return s })})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			stops = append(stops, w.Stop)
		}
		return func() {
			for _, stop := range stops {
				stop()
			}
			wc.Close()
		}
	}

	// Temporal goes away. The API still takes the work.
	temporal.Stop()
	first := submit()
	gen := e.Do("POST", "/exam-generations", teacher, map[string]any{"subject": "Photosynthesis", "count": 3}).Must(t, 200)
	if gen.Body["status"] != "running" {
		t.Fatalf("generation %s", gen.Raw)
	}
	genID := gen.Body["id"].(string)
	waitMetric(t, e, `assessd_outbox_dispatches_total{kind="grading",outcome="retried"}`, func(v float64) bool { return v >= 1 })
	waitMetric(t, e, `assessd_outbox_dispatches_total{kind="generation",outcome="retried"}`, func(v float64) bool { return v >= 1 })
	waitMetric(t, e, `assessd_outbox_pending{kind="grading"}`, func(v float64) bool { return v == 1 })
	waitMetric(t, e, `assessd_outbox_pending{kind="generation"}`, func(v float64) bool { return v == 1 })
	if r := e.Do("GET", "/exams/"+exam.ID+"/results/"+first, teacher, nil).Must(t, 200); r.Body["status"] != "grading" {
		t.Fatalf("result while Temporal is down: %s", r.Raw)
	}

	// Temporal is back on the same address: the app's client reconnects.
	temporal.Start()
	stopWorkers := startWorkers()
	waitStatus(t, e, "/exams/"+exam.ID+"/results/"+first, teacher, "graded")
	ready := waitStatus(t, e, "/exam-generations/"+genID, teacher, "ready")
	if provider.grades.Load() != 1 || provider.generations.Load() != 1 {
		t.Fatalf("provider graded %d times and generated %d times, want once each", provider.grades.Load(), provider.generations.Load())
	}
	exams := apptest.Items(e.Do("GET", "/exams", teacher, nil).Must(t, 200).Body, "exams")
	if len(exams) != 2 || ready.Body["examId"] == "" {
		t.Fatalf("%d exams after one generation (want the essay exam and the generated one); generation %s", len(exams), ready.Raw)
	}
	waitMetric(t, e, `assessd_outbox_pending{kind="grading"}`, func(v float64) bool { return v == 0 })

	// A workflow is lost with its server: no worker runs it, and a new,
	// empty dev server takes the old one's place.
	stopWorkers()
	second := submit()
	waitMetric(t, e, `assessd_outbox_dispatches_total{kind="grading",outcome="started"}`, func(v float64) bool { return v >= 2 })
	temporal.Stop()
	temporal.Start()
	defer startWorkers()()
	waitMetric(t, e, `assessd_outbox_dispatches_total{kind="grading",outcome="restarted"}`, func(v float64) bool { return v >= 1 })
	waitStatus(t, e, "/exams/"+exam.ID+"/results/"+second, teacher, "graded")
	if got := provider.grades.Load(); got != 2 {
		t.Fatalf("provider graded %d times for two results", got)
	}
}

// waitStatus polls path until its status is want (or fails the test on
// a failed one or after a minute).
func waitStatus(t *testing.T, e *env, path, key, want string) response {
	t.Helper()
	var r response
	eventually.Succeeds(t, time.Minute, func() error {
		r = e.Do("GET", path, key, nil).Must(t, 200)
		switch r.Body["status"] {
		case want:
			return nil
		case "failed":
			t.Fatalf("%s failed: %s", path, r.Raw)
		}
		return fmt.Errorf("%s still %v", path, r.Body["status"])
	})
	return r
}

// waitMetric polls /metrics until the sample named series satisfies ok.
func waitMetric(t *testing.T, e *env, series string, ok func(float64) bool) {
	t.Helper()
	eventually.Succeeds(t, time.Minute, func() error {
		r := e.Do("GET", "/metrics", "", nil).Must(t, 200)
		for line := range strings.SplitSeq(string(r.Raw), "\n") {
			if rest, has := strings.CutPrefix(line, series+" "); has {
				if value, _ := strconv.ParseFloat(rest, 64); !ok(value) {
					return fmt.Errorf("%s is %v", series, value)
				}
				return nil
			}
		}
		return fmt.Errorf("no sample %s", series)
	})
}
