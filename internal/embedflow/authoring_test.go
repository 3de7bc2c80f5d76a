package embedflow_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/embedflow"
	"github.com/assessd/assessd/internal/testkit/browsertest"
	"github.com/assessd/assessd/internal/testkit/redistest"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

func TestAuthoringFlow(t *testing.T) {
	db := storetest.New(t)
	f := newFixtureWith(t, redistest.Client(t), db, nilGenerator)
	content := assessment.NewService(db)
	srv := serve(t, f)
	exam, err := content.CreateExam(f.teacher, assessment.NewExam{Name: "Geography", Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	mc, err := content.CreateQuestion(f.teacher, exam.ID, assessment.NewQuestion{Type: assessment.TypeMultipleChoice, Prompt: "Which is not a capital?", Points: 1,
		Config: map[string]any{"options": []any{
			map[string]any{"id": "a", "text": "Paris", "correct": false}, map[string]any{"id": "b", "text": "Lyon", "correct": true},
			map[string]any{"id": "c", "text": "All of the above", "correct": false}}}})
	if err != nil {
		t.Fatal(err)
	}
	tf, err := content.CreateQuestion(f.teacher, exam.ID, assessment.NewQuestion{Type: assessment.TypeTrueFalse, Prompt: "Oslo is in Norway.", Points: 1,
		Config: map[string]any{"correct": true}})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := f.svc.Create(f.teacher, embedflow.NewSession{Flow: "authoring", ActorID: f.users[tenancy.RoleTeacher].ID, ExamID: exam.ID})
	if err != nil {
		t.Fatal(err)
	}
	base := srv.URL + "/embed/" + sess.ID
	get := func() string {
		res, err := http.Get(base)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	post := func(path string, form url.Values) (int, string) {
		res, err := http.PostForm(base+path, form)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}

	page := get()
	if !strings.Contains(page, "Which is not a capital?") || !strings.Contains(page, "Quality findings") ||
		!strings.Contains(strings.ToLower(page), "all of the above") || !strings.Contains(page, `class="finding`) {
		t.Fatalf("authoring page lacks the questions or their findings:\n%s", page)
	}
	if code, _ := post("/questions", url.Values{"type": {"short_text"}, "prompt": {"Capital of Peru?"}, "points": {"2"},
		"config": {`{"acceptedAnswers":["Lima"]}`}}); code != http.StatusOK || !strings.Contains(get(), "Capital of Peru?") {
		t.Fatalf("adding a question: %d", code)
	}
	if code, body := post("/questions/"+tf.ID, url.Values{"prompt": {"x"}, "points": {"1"}, "config": {"not json"}}); code != http.StatusBadRequest || !strings.Contains(body, "JSON object") {
		t.Fatalf("invalid config: %d", code)
	}
	post("/questions/"+mc.ID+"/move", url.Values{"to": {"down"}})
	page = get()
	if strings.Index(page, "Oslo is in Norway.") > strings.Index(page, "Which is not a capital?") {
		t.Fatal("moving a question down did not reorder")
	}
	post("/questions/"+tf.ID+"/delete", nil)
	if strings.Contains(get(), "Oslo is in Norway.") {
		t.Fatal("deleted question still shown")
	}

	ctx := browsertest.NewChrome(t)
	browsertest.CheckPage(t, ctx, base, "embed-authoring")

	// An edited, unsaved question makes leaving the page ask first; a
	// saved one does not.
	var prompted atomic.Bool
	chromedp.ListenTarget(ctx, func(ev any) {
		if d, ok := ev.(*cdppage.EventJavascriptDialogOpening); ok && d.Type == cdppage.DialogTypeBeforeunload {
			prompted.Store(true)
			go func() { _ = chromedp.Run(ctx, cdppage.HandleJavaScriptDialog(true)) }()
		}
	})
	err = chromedp.Run(ctx, chromedp.SendKeys(`textarea[name=prompt]`, " (edited)", chromedp.ByQuery), chromedp.Navigate("about:blank"))
	if err != nil || !prompted.Load() {
		t.Fatalf("leaving with unsaved changes: prompted %v, %v", prompted.Load(), err)
	}
	prompted.Store(false)
	err = chromedp.Run(ctx, chromedp.Navigate(base), chromedp.SendKeys(`textarea[name=prompt]`, " (saved)", chromedp.ByQuery),
		chromedp.Click(`form[data-guard] button[type=submit]`, chromedp.ByQuery), chromedp.WaitVisible(`.quality`, chromedp.ByQuery))
	if err != nil || prompted.Load() {
		t.Fatalf("saving: prompted %v, %v", prompted.Load(), err)
	}
}
