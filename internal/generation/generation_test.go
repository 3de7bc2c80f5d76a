package generation_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	gradingactivities "github.com/assessd/assessd/activities/grading"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/generation"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/testkit/devenvtest"
	"github.com/assessd/assessd/internal/testkit/eventually"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/workflows"
)

// TestGenerateExamOffline generates an exam end to end on the dev server
// with the builtin provider: no network, a ready exam with valid questions.
func TestGenerateExamOffline(t *testing.T) {
	ctx := context.Background()
	tc := devenvtest.Temporal(t)
	db := storetest.New(t)
	reg := prometheus.NewRegistry()
	w, err := app.NewWorker(tc, db, app.WorkerConfig{Region: "global", Provider: ai.NewBuiltin(), Fetcher: media.NewFetcher(nil, media.Options{}),
		Metrics: gradingactivities.NewMetrics(reg, func(s string) string { return s })})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

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
	eventually.Succeeds(t, 30*time.Second, func() error {
		if g, err = svc.Get(tctx, g.ID); err != nil {
			t.Fatal(err)
		}
		if g.Status == "running" {
			return errors.New("generation still running")
		}
		return nil
	})
	if g.Status != "ready" || g.ExamID == "" {
		t.Fatalf("generation %+v", g)
	}
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
