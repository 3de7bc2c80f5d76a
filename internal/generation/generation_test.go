package generation_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.temporal.io/sdk/client"

	gradingactivities "github.com/assessd/assessd/activities/grading"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/generation"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/devenvtest"
	"github.com/assessd/assessd/internal/testkit/eventually"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/workflows"
)

// startWorker runs the global region's worker with provider until t ends,
// and returns the registry of its metrics.
func startWorker(t *testing.T, tc client.Client, db *store.DB, provider ai.Provider) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	w, err := app.NewWorker(tc, db, app.WorkerConfig{Region: "global", Provider: provider, Fetcher: media.NewFetcher(nil, media.Options{}),
		Metrics: gradingactivities.NewMetrics(reg, func(s string) string { return s }), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return reg
}

// wantGenerations waits for the generations counter to read one
// organization's outcomes, counted once each (the activity counts a
// generation just after its status is committed).
func wantGenerations(t *testing.T, reg *prometheus.Registry, org string, ready, failed int) {
	t.Helper()
	want := fmt.Sprintf(`
		# HELP assessd_exam_generations_total Exam generations finished, by organization, region and outcome (ready, failed).
		# TYPE assessd_exam_generations_total counter
		assessd_exam_generations_total{org=%[1]q,outcome="failed",region="global"} %[3]d
		assessd_exam_generations_total{org=%[1]q,outcome="ready",region="global"} %[2]d
	`, org, ready, failed)
	eventually.Succeeds(t, 5*time.Second, func() error {
		return testutil.GatherAndCompare(reg, strings.NewReader(want), "assessd_exam_generations_total")
	})
}

// waitFinished waits for generation id to end, and returns it.
func waitFinished(t *testing.T, ctx context.Context, svc *generation.Service, id string) generation.Generation {
	t.Helper()
	var g generation.Generation
	eventually.Succeeds(t, 30*time.Second, func() error {
		var err error
		if g, err = svc.Get(ctx, id); err != nil {
			t.Fatal(err)
		}
		if g.Status == "running" {
			return errors.New("generation still running")
		}
		return nil
	})
	return g
}

// TestGenerateExamOffline generates an exam end to end on the dev server
// with the builtin provider: no network, a ready exam with valid questions.
func TestGenerateExamOffline(t *testing.T) {
	ctx := context.Background()
	tc := devenvtest.Temporal(t)
	db := storetest.New(t)
	reg := startWorker(t, tc, db, ai.NewBuiltin())

	ten := tenancy.NewService(db)
	org, err := ten.CreateOrg(ctx, tenancy.NewOrg{Name: "X", Country: "US"})
	if err != nil {
		t.Fatal(err)
	}
	sys := tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	teacher, err := ten.CreateUser(sys, tenancy.NewUser{Email: "t@x.test", Name: "T", Role: tenancy.RoleTeacher})
	if err != nil {
		t.Fatal(err)
	}
	tctx := tenancy.WithCaller(ctx, &tenancy.Caller{Kind: tenancy.KindAPIKey, OrgID: org.ID, UserID: teacher.ID,
		Role: tenancy.RoleTeacher, Scopes: tenancy.APIKeyScopes(tenancy.RoleTeacher)})
	content := assessment.NewService(db)
	svc := generation.NewService(db, content)
	go app.NewDispatcher(tc, db, reg, workflows.DispatchOptions{}).Run(t.Context())

	if _, err := svc.Create(tctx, generation.Params{Subject: ""}); !errs.Is(err, errs.KindInvalid) {
		t.Fatalf("empty subject: %v", err)
	}
	if _, err := svc.Create(tctx, generation.Params{Subject: "Biology", QuestionTypes: []string{"file_upload"}}); !errs.Is(err, errs.KindInvalid) {
		t.Fatalf("ungeneratable type: %v", err)
	}
	g, err := svc.Create(tctx, generation.Params{Subject: "Photosynthesis", StudentLevel: "grade 7", DurationMinutes: 30, Count: 6})
	if err != nil {
		t.Fatal(err)
	}
	g = waitFinished(t, tctx, svc, g.ID)
	if g.Status != "ready" || g.ExamID == "" {
		t.Fatalf("generation %+v", g)
	}
	wantGenerations(t, reg, org.ID, 1, 0)
	qs, _, err := content.Questions(tctx, g.ExamID, paging.Page{Size: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 6 {
		t.Fatalf("generated exam has %d questions, want 6", len(qs))
	}
	exam, err := content.Exam(tctx, g.ExamID)
	if err != nil || exam.Name != "Photosynthesis (grade 7)" || exam.DurationMinutes != 30 {
		t.Fatalf("exam %+v, %v", exam, err)
	}
	// Requested by the teacher, completed by the platform (spec 6.1).
	entries, _, err := ten.AuditLogs(sys, audit.Filter{TargetType: "exam_generation", TargetID: g.ID}, paging.Page{Size: 10})
	if err != nil || len(entries) != 2 {
		t.Fatalf("generation audit entries %+v, %v", entries, err)
	}
	done, requested := entries[0], entries[1]
	if requested.Action != "exam_generation.requested" || requested.Actor.ID != teacher.ID ||
		done.Action != "exam_generation.completed" || done.Actor != (audit.Actor{Kind: audit.ActorSystem, ID: "generation"}) || done.After["examId"] != g.ExamID {
		t.Fatalf("generation audit entries %+v", entries)
	}
}

// A provider whose questions are too large to pass between the workflow's
// steps fails the generation at once with the reason, without being asked
// again on every retry; questions beyond those asked for are dropped.
func TestOversizedGenerationFailsAtOnce(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var qs []map[string]any
		for i := range 6 { // one more than asked for
			qs = append(qs, map[string]any{"type": "essay", "prompt": fmt.Sprintf("Question %d: %s", i, strings.Repeat("long ", 100_000)),
				"config": `{"rubric": "any"}`, "points": 5})
		}
		content, _ := json.Marshal(map[string]any{"questions": qs})
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": string(content)}}}})
	}))
	defer provider.Close()
	tc := devenvtest.Temporal(t)
	db := storetest.New(t)
	reg := startWorker(t, tc, db, ai.NewOpenAI(ai.OpenAIConfig{BaseURL: provider.URL, APIKey: "test-key", Model: "writer"}))
	go app.NewDispatcher(tc, db, reg, workflows.DispatchOptions{}).Run(t.Context())

	ten := tenancy.NewService(db)
	org, err := ten.CreateOrg(ctx, tenancy.NewOrg{Name: "X", Country: "US"})
	if err != nil {
		t.Fatal(err)
	}
	sys := tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	svc := generation.NewService(db, assessment.NewService(db))
	g, err := svc.Create(sys, generation.Params{Subject: "Rivers", Count: 5}) // 2.4 MB: over Temporal's 2 MB
	if err != nil {
		t.Fatal(err)
	}
	g = waitFinished(t, sys, svc, g.ID)
	if g.Status != "failed" || !strings.Contains(g.Error, "the generated questions: 2441 KiB, over the limit of 1024 KiB") {
		t.Fatalf("generation %s: %q", g.Status, g.Error)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the provider was asked %d times, want once", n)
	}
	wantGenerations(t, reg, org.ID, 0, 1)
}
