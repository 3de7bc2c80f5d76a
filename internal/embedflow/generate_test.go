package embedflow_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	gradingactivities "github.com/assessd/assessd/activities/grading"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/embedflow"
	"github.com/assessd/assessd/internal/generation"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/browsertest"
	"github.com/assessd/assessd/internal/testkit/devenvtest"
	"github.com/assessd/assessd/internal/testkit/eventually"
	"github.com/assessd/assessd/internal/testkit/redistest"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/workflows"
)

// TestGenerateExamFlow submits the generate-exam form of a session with a
// hidden, preset student level, and follows the progress page until the
// exam is ready (Temporal dev server, builtin provider).
func TestGenerateExamFlow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tc := devenvtest.Temporal(t)
	db := storetest.New(t)
	w, err := app.NewWorker(tc, db, app.WorkerConfig{Region: "eu", Provider: ai.NewBuiltin(), Fetcher: media.NewFetcher(nil, media.Options{}),
		Metrics: gradingactivities.NewMetrics(prometheus.NewRegistry(), func(s string) string { return s })})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	content := assessment.NewService(db)
	f := newFixtureWith(t, redistest.Client(t), db, func(db *store.DB) embedflow.Generator {
		return generation.NewService(db, content)
	})
	go app.NewDispatcher(tc, db, prometheus.NewRegistry(), workflows.DispatchOptions{}).Run(t.Context())
	srv := serve(t, f)
	sess, err := f.svc.Create(f.teacher, embedflow.NewSession{Flow: "generate-exam", ActorID: f.users[tenancy.RoleTeacher].ID,
		Presets: map[string]any{"studentLevel": "grade 7", "hideStudentLevel": true}})
	if err != nil {
		t.Fatal(err)
	}
	// A forged visible value for the hidden field must not win over the preset.
	res, err := http.PostForm(srv.URL+"/embed/"+sess.ID+"/generate", url.Values{
		"subject": {"Volcanoes"}, "studentLevel": {"university"}, "durationMinutes": {"20"}, "questionTypes": {"true_false", "essay"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	progress := res.Request.URL.String()
	if !strings.Contains(progress, "/generations/gen_") {
		t.Fatalf("submitting went to %s (%d)", progress, res.StatusCode)
	}
	eventually.Succeeds(t, 30*time.Second, func() error {
		res, err := http.Get(progress)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if strings.Contains(string(body), "Your exam is ready.") {
			return nil
		}
		if !strings.Contains(string(body), "Generating your exam") {
			t.Fatalf("progress page: %s", body)
		}
		return errors.New("the progress page still says generating")
	})
	// The ready page opens the exam in the authoring flow: a new session
	// of the same teacher, with a button and (htmx) by itself.
	chrome := browsertest.NewChrome(t)
	browsertest.CheckPage(t, chrome, progress, "embed-generation-ready")
	res, err = http.PostForm(progress+"/edit", nil)
	if err != nil {
		t.Fatal(err)
	}
	editor, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(res.Request.URL.Path, "/embed/emb_") || !strings.Contains(string(editor), "Edit exam") || !strings.Contains(string(editor), "Volcanoes") {
		t.Fatalf("opening the generated exam: %d %s", res.StatusCode, res.Request.URL)
	}
	req, _ := http.NewRequest("GET", progress, nil)
	req.Header.Set("HX-Request", "true")
	if res, err := http.DefaultClient.Do(req); err != nil || !strings.HasPrefix(res.Header.Get("HX-Redirect"), "/embed/emb_") {
		t.Fatalf("a poll of the ready page does not open the editor: %v", err)
	} else {
		res.Body.Close()
	}
	gctx := tenancy.WithCaller(ctx, tenancy.SystemCaller(f.users[tenancy.RoleTeacher].OrgID))
	exams, _, err := content.Exams(gctx, assessment.ExamFilter{}, pagingFirst())
	if err != nil || len(exams) != 1 || exams[0].Name != "Volcanoes (grade 7)" || exams[0].DurationMinutes != 20 {
		t.Fatalf("generated exams %+v, %v", exams, err)
	}
}

func pagingFirst() paging.Page { return paging.Page{Size: 10} }
