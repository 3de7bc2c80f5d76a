package embedflow_test

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	gradingactivities "github.com/assessd/assessd/activities/grading"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/embedflow"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/testkit/browsertest"
	"github.com/assessd/assessd/internal/testkit/devenvtest"
	"github.com/assessd/assessd/internal/testkit/eventually"
	"github.com/assessd/assessd/internal/testkit/redistest"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/workflows"
)

// TestAuthoringRegenerate presses Regenerate in the authoring flow: the
// proposal shows beside the current version, and accepting it makes it the
// question's next revision.
func TestAuthoringRegenerate(t *testing.T) {
	t.Parallel()
	tc := devenvtest.Temporal(t)
	db := storetest.New(t)
	// The fixture's organization is German: its AI region is eu.
	w, err := app.NewWorker(tc, db, app.WorkerConfig{Region: "eu", Provider: ai.NewBuiltin(), Fetcher: media.NewFetcher(nil, media.Options{}),
		Metrics: gradingactivities.NewMetrics(prometheus.NewRegistry(), func(s string) string { return s })})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	go app.NewDispatcher(tc, db, prometheus.NewRegistry(), workflows.DispatchOptions{Sweep: 200 * time.Millisecond}).Run(t.Context())
	f := newFixtureWith(t, redistest.Client(t), db, nilGenerator)
	content := assessment.NewService(db)
	srv := serve(t, f)
	exam, err := content.CreateExam(f.teacher, assessment.NewExam{Name: "Sums", Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := content.CreateQuestion(f.teacher, exam.ID, assessment.NewQuestion{Type: assessment.TypeNumeric, Prompt: "How much is 3 + 4?", Points: 1,
		Config: map[string]any{"correct": 7}})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := f.svc.Create(f.teacher, embedflow.NewSession{Flow: "authoring", ActorID: f.users[tenancy.RoleTeacher].ID, ExamID: exam.ID})
	if err != nil {
		t.Fatal(err)
	}
	base := srv.URL + "/embed/" + sess.ID
	get := func(u string) (int, string) {
		res, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if _, page := get(base); !strings.Contains(page, "/questions/"+q.ID+"/regenerate") {
		t.Fatalf("authoring page has no Regenerate button:\n%s", page)
	}

	res, err := http.PostForm(base+"/questions/"+q.ID+"/regenerate", url.Values{"instructions": {"change the numbers"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	page := res.Request.URL.String()
	if !strings.Contains(page, "/regenerations/rgn_") {
		t.Fatalf("regenerate went to %s", page)
	}
	var body string
	eventually.Succeeds(t, time.Minute, func() error {
		_, body = get(page)
		body = html.UnescapeString(body)
		if !strings.Contains(body, `id="proposal"`) {
			return fmt.Errorf("no proposal yet:\n%s", body)
		}
		return nil
	})
	if !strings.Contains(body, "How much is 3 + 4?") || strings.Count(body, "How much is") != 2 {
		t.Fatalf("the page does not show both versions:\n%s", body)
	}
	// Another session's exam cannot reach the regeneration.
	other, err := content.CreateExam(f.teacher, assessment.NewExam{Name: "Other", Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	otherSess, err := f.svc.Create(f.teacher, embedflow.NewSession{Flow: "authoring", ActorID: f.users[tenancy.RoleTeacher].ID, ExamID: other.ID})
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := get(strings.Replace(page, sess.ID, otherSess.ID, 1)); code != http.StatusNotFound {
		t.Fatalf("another exam's session reads the regeneration: %d", code)
	}

	res, err = http.PostForm(page+"/accept", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	now, err := content.Question(f.teacher, exam.ID, q.ID)
	if err != nil || res.Request.URL.String() != base || now.Revision != 2 || now.Prompt == q.Prompt {
		t.Fatalf("after accepting (at %s): %+v %v", res.Request.URL, now, err)
	}

	// In the browser: Regenerate, wait for the proposal, accept it.
	ctx := browsertest.NewChrome(t)
	var proposal string
	if err := chromedp.Run(ctx, chromedp.Navigate(base), chromedp.Click(`form.regenerate button`, chromedp.ByQuery),
		chromedp.WaitVisible(`#proposal`, chromedp.ByQuery), chromedp.Location(&proposal)); err != nil {
		t.Fatal(err)
	}
	browsertest.CheckPage(t, ctx, proposal, "embed-regeneration")
	if err := chromedp.Run(ctx, chromedp.Click(`#proposal button`, chromedp.ByQuery), chromedp.WaitVisible(`.quality`, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	if now, err := content.Question(f.teacher, exam.ID, q.ID); err != nil || now.Revision != 3 {
		t.Fatalf("after accepting in the browser: %+v %v", now, err)
	}
}
