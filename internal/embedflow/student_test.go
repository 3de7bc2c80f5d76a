package embedflow_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	gradingactivities "github.com/assessd/assessd/activities/grading"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/embedflow"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/browsertest"
	"github.com/assessd/assessd/internal/testkit/devenvtest"
	"github.com/assessd/assessd/internal/testkit/redistest"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/workflows"
)

// TestStudentTakesExamAndSeesGradedResult drives the student flows in
// Chromium: answer a true/false and an essay question, submit once, then
// open the results flow and watch the AI-graded result arrive.
func TestStudentTakesExamAndSeesGradedResult(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tc := devenvtest.Temporal(t)
	db := storetest.New(t)
	for _, region := range []string{"eu", "global"} {
		w, err := app.NewWorker(tc, db, app.WorkerConfig{Region: region, Provider: ai.NewBuiltin(), Fetcher: media.NewFetcher(nil, media.Options{}),
			Metrics: gradingactivities.NewMetrics(prometheus.NewRegistry(), func(s string) string { return s })})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
	}
	content := assessment.NewService(db)
	go app.NewDispatcher(tc, db, prometheus.NewRegistry(), workflows.DispatchOptions{}).Run(t.Context())
	f := newFixtureWith(t, redistest.Client(t), db, func(*store.DB) embedflow.Generator { return nil })
	f.svc = embedflow.NewService(embedflow.NewStore(redistest.Client(t)), tenancy.NewService(db), content, nil, nil, "https://assessd.example", prometheus.NewRegistry(), func(s string) string { return s })
	srv := serve(t, f)

	exam, err := content.CreateExam(f.teacher, assessment.NewExam{Name: "Plants", Language: "en", DurationMinutes: 30})
	if err != nil {
		t.Fatal(err)
	}
	tf, err := content.CreateQuestion(f.teacher, exam.ID, assessment.NewQuestion{Type: assessment.TypeTrueFalse, Prompt: "Plants need light.", Points: 1, Config: map[string]any{"correct": true}})
	if err != nil {
		t.Fatal(err)
	}
	essay, err := content.CreateQuestion(f.teacher, exam.ID, assessment.NewQuestion{Type: assessment.TypeEssay, Prompt: "Describe photosynthesis.", Points: 4,
		Config: map[string]any{"rubric": "light chlorophyll sugar"}})
	if err != nil {
		t.Fatal(err)
	}
	student := f.users[tenancy.RoleStudent].ID
	host := hostPage(t)
	take, err := f.svc.Create(f.teacher, embedflow.NewSession{Flow: "student-exam", ActorID: student, ExamID: exam.ID, AllowedOrigins: []string{host}})
	if err != nil {
		t.Fatal(err)
	}

	chrome := browsertest.NewChrome(t)
	browsertest.CheckPage(t, chrome, srv.URL+"/embed/"+take.ID, "embed-student-exam")
	// Submitting asks first: dismissed, nothing is sent; accepted, the
	// answers go in.
	var accept atomic.Bool
	var confirms atomic.Int32
	chromedp.ListenTarget(chrome, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok && d.Type == page.DialogTypeConfirm {
			confirms.Add(1)
			go func() { _ = chromedp.Run(chrome, page.HandleJavaScriptDialog(accept.Load())) }()
		}
	})
	var submitted string
	err = chromedp.Run(chrome,
		chromedp.Navigate(srv.URL+"/embed/"+take.ID),
		chromedp.Click(`button[type=submit]`, chromedp.ByQuery),
		chromedp.Sleep(500*time.Millisecond),
	)
	if err != nil || confirms.Load() != 1 {
		t.Fatalf("dismissing the confirmation: %d dialogs, %v", confirms.Load(), err)
	}
	if s, _ := f.svc.Open(ctx, take.ID); s.ResultID != "" {
		t.Fatal("a dismissed confirmation submitted the answers")
	}
	// Answers are saved as they are given: a reload brings them back, with
	// the progress and the timer running from the first opening.
	var progress, timer, essayText string
	var checked bool
	err = chromedp.Run(chrome,
		chromedp.Navigate(srv.URL+"/embed/"+take.ID),
		chromedp.WaitVisible(`textarea[name="`+essay.ID+`"]`, chromedp.ByQuery),
		chromedp.Click(`input[name="`+tf.ID+`"][value=true]`, chromedp.ByQuery),
		chromedp.SendKeys(`textarea[name="`+essay.ID+`"]`, "Plants use light and chlorophyll to make sugar from water and carbon dioxide, releasing oxygen.", chromedp.ByQuery),
		chromedp.Poll(`document.getElementById("answered").textContent === "2 / 2"`, nil, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Reload(),
		chromedp.WaitVisible(`#timer`, chromedp.ByQuery),
		chromedp.Sleep(1200*time.Millisecond),
		chromedp.Text(`#answered`, &progress, chromedp.ByQuery),
		chromedp.Text(`#timer`, &timer, chromedp.ByQuery),
		chromedp.Value(`textarea[name="`+essay.ID+`"]`, &essayText, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('input[name="`+tf.ID+`"][value=true]').checked`, &checked),
	)
	if err != nil || progress != "2 / 2" || !strings.HasPrefix(timer, "29:") || !strings.HasPrefix(essayText, "Plants use light") || !checked {
		t.Fatalf("after a reload: %v, progress %q, timer %q, essay %q, true checked %v", err, progress, timer, essayText, checked)
	}
	browsertest.CheckPage(t, chrome, srv.URL+"/embed/"+take.ID, "embed-student-exam-answered")
	accept.Store(true)
	err = chromedp.Run(chrome,
		chromedp.Navigate(srv.URL+"/embed/"+take.ID),
		chromedp.WaitVisible(`textarea[name="`+essay.ID+`"]`, chromedp.ByQuery),
		chromedp.Click(`button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.notice`, chromedp.ByQuery),
		chromedp.Text(`main`, &submitted, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("taking the exam: %v", err)
	}
	if !strings.Contains(submitted, "Your answers were submitted.") {
		t.Fatalf("after submitting: %s", submitted)
	}

	// The session remembers its result: the results flow shows it.
	opened, err := f.svc.Open(ctx, take.ID)
	if err != nil || opened.ResultID == "" {
		t.Fatalf("session after submit: %+v, %v", opened, err)
	}
	if msgs := hostMessages(t, chrome, host, srv.URL+"/embed/"+take.ID, "submitted"); !strings.Contains(msgs, `"origin":"`+srv.URL+`"`) ||
		!strings.Contains(msgs, `"resultId":"`+opened.ResultID+`"`) {
		t.Fatalf("messages from another origin, or without the result: %s", msgs)
	}
	// Submitting again, even at once from two tabs, records nothing more.
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res, err := http.PostForm(srv.URL+"/embed/"+take.ID+"/submit", url.Values{"shown": {tf.ID}, tf.ID: {"false"}}); err == nil {
				res.Body.Close()
			}
		}()
	}
	wg.Wait()
	if again, _ := f.svc.Open(ctx, take.ID); again.ResultID != opened.ResultID {
		t.Fatalf("a second submission replaced the result: %s → %s", opened.ResultID, again.ResultID)
	}
	if results, _, err := content.Results(f.teacher, exam.ID, assessment.ResultFilter{}, paging.Page{Size: 10}); err != nil || len(results) != 1 {
		t.Fatalf("results after submitting three times: %d, %v", len(results), err)
	}
	review, err := f.svc.Create(f.teacher, embedflow.NewSession{Flow: "student-results", ActorID: student, ResultID: opened.ResultID, AllowedOrigins: []string{host},
		Presets: map[string]any{"showCorrectAnswers": true}})
	if err != nil {
		t.Fatal(err)
	}
	var status, page string
	err = chromedp.Run(chrome,
		chromedp.Navigate(srv.URL+"/embed/"+review.ID),
		chromedp.WaitVisible(`//span[@id="status" and text()="(graded)"]`, chromedp.BySearch),
		chromedp.Text(`#status`, &status, chromedp.ByQuery),
		chromedp.Text(`main`, &page, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("reviewing the result: %v", err)
	}
	browsertest.CheckPage(t, chrome, srv.URL+"/embed/"+review.ID, "embed-student-results")
	for _, want := range []string{"Question", "Your answer", "Points", "Feedback", "Describe photosynthesis.", "Plants use light", "1 / 1", "%", "Correct answer: True"} {
		if !strings.Contains(page, want) {
			t.Fatalf("result page lacks %q: %s", want, page)
		}
	}
	msgs := hostMessages(t, chrome, host, srv.URL+"/embed/"+review.ID, "graded")
	for _, want := range []string{`"type":"assessd.ready"`, `"type":"assessd.resize","height":`, `"status":"graded"`, `"maxScore":5`} {
		if !strings.Contains(msgs, want) {
			t.Errorf("host messages lack %s: %s", want, msgs)
		}
	}
}

// hostPage serves a host product's page that frames ?src and records the
// messages it receives; it returns the host's origin.
func hostPage(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, `<!doctype html><title>host</title><script>window.msgs = [];
addEventListener("message", e => msgs.push({origin: e.origin, data: e.data}));</script><iframe src=%q title="assessd"></iframe>`, r.URL.Query().Get("src"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// hostMessages opens src framed in the host page, waits for an event of
// type want, and returns every message received as JSON.
func hostMessages(t *testing.T, chrome context.Context, host, src, want string) string {
	t.Helper()
	var msgs string
	err := chromedp.Run(chrome,
		chromedp.Navigate(host+"/?src="+url.QueryEscape(src)),
		chromedp.Poll(`msgs.some(m => m.data.type === "assessd.`+want+`")`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate(`JSON.stringify(msgs)`, &msgs),
	)
	if err != nil {
		t.Fatalf("waiting for the %s message: %v (%s)", want, err, msgs)
	}
	return msgs
}

// TestStudentExamPaged drives the paged layout: one question per screen,
// Next saves and moves on without JavaScript's help, answers survive.
func TestStudentExamPaged(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	f := newFixtureWith(t, redistest.Client(t), db, nilGenerator)
	content := assessment.NewService(db)
	srv := serve(t, f)
	exam, err := content.CreateExam(f.teacher, assessment.NewExam{Name: "Rivers", Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	var qs []assessment.Question
	for _, prompt := range []string{"Longest river?", "Widest river?"} {
		q, err := content.CreateQuestion(f.teacher, exam.ID, assessment.NewQuestion{Type: assessment.TypeShortText, Prompt: prompt, Points: 1, Config: map[string]any{"acceptedAnswers": []any{"Nile"}}})
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q)
	}
	sess, err := f.svc.Create(f.teacher, embedflow.NewSession{Flow: "student-exam", ActorID: f.users[tenancy.RoleStudent].ID, ExamID: exam.ID, Presets: map[string]any{"layout": "paged"}})
	if err != nil {
		t.Fatal(err)
	}
	base := srv.URL + "/embed/" + sess.ID
	chrome := browsertest.NewChrome(t)
	browsertest.CheckPage(t, chrome, base, "embed-student-exam-paged")
	var second, first string
	err = chromedp.Run(chrome, chromedp.Navigate(base),
		chromedp.SendKeys(`input[name="`+qs[0].ID+`"]`, "Nile", chromedp.ByQuery),
		chromedp.Click(`.exam-nav button`, chromedp.ByQuery),
		chromedp.WaitVisible(`input[name="`+qs[1].ID+`"]`, chromedp.ByQuery),
		chromedp.Text(`legend`, &second, chromedp.ByQuery),
		chromedp.Click(`.exam-nav button.secondary`, chromedp.ByQuery),
		chromedp.WaitVisible(`input[name="`+qs[0].ID+`"]`, chromedp.ByQuery),
		chromedp.Value(`input[name="`+qs[0].ID+`"]`, &first, chromedp.ByQuery))
	if err != nil || !strings.Contains(second, "2 / 2") || first != "Nile" {
		t.Fatalf("paging: %v, second screen %q, first answer %q", err, second, first)
	}
	browsertest.CheckPage(t, chrome, base+"?q=2", "embed-student-exam-paged-last")
}

// TestResultPageShowsTheGradeWhenGradingFinishes opens the results flow in
// Chromium while the result is grading (no worker runs) and finishes it
// 2.5 seconds later: the page, which has held one long poll since it
// loaded, shows the grade within a second of the finish, without a reload
// or a Content-Security-Policy violation.
func TestResultPageShowsTheGradeWhenGradingFinishes(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	content := assessment.NewService(db)
	watch, stop := context.WithCancel(context.Background())
	defer stop()
	go content.WatchFinishedResults(watch)
	f := newFixtureWith(t, redistest.Client(t), db, func(*store.DB) embedflow.Generator { return nil })
	f.svc = embedflow.NewService(embedflow.NewStore(redistest.Client(t)), tenancy.NewService(db), content, nil, nil, "https://assessd.example", prometheus.NewRegistry(), func(s string) string { return s })
	srv := serve(t, f)

	exam, err := content.CreateExam(f.teacher, assessment.NewExam{Name: "Plants", Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	essay, err := content.CreateQuestion(f.teacher, exam.ID, assessment.NewQuestion{Type: assessment.TypeEssay, Prompt: "Describe photosynthesis.", Points: 4})
	if err != nil {
		t.Fatal(err)
	}
	student := f.users[tenancy.RoleStudent].ID
	result, err := content.SubmitResult(f.teacher, exam.ID, assessment.NewResult{UserID: student, Answers: []assessment.NewAnswer{{QuestionID: essay.ID, Value: "Light becomes sugar."}}})
	if err != nil || result.Status != assessment.StatusGrading {
		t.Fatalf("submitted %+v, %v", result, err)
	}
	// The host's font, which the frame does not have, and its primary colour.
	review, err := f.svc.Create(f.teacher, embedflow.NewSession{Flow: "student-results", ActorID: student, ResultID: result.ID,
		Look: embedflow.Look{Colors: embedflow.Colors{Primary: "#6b1f80"}, FontFamily: "Inter"}})
	if err != nil {
		t.Fatal(err)
	}
	chrome := browsertest.NewChrome(t)
	violations := browsertest.WatchCSP(t, chrome)
	var status string
	if err := chromedp.Run(chrome, chromedp.Navigate(srv.URL+"/embed/"+review.ID), chromedp.Text(`#status`, &status, chromedp.ByQuery)); err != nil || status != "(grading)" {
		t.Fatalf("the page while grading: %q, %v", status, err)
	}
	time.Sleep(2500 * time.Millisecond)
	if err := content.RecordGrade(f.teacher, result.ID, essay.ID, 3, "Good.", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := content.FinishResult(f.teacher, result.ID, nil); err != nil {
		t.Fatal(err)
	}
	finished := time.Now()
	ctx, cancel := context.WithTimeout(chrome, 10*time.Second)
	defer cancel()
	var total string
	if err := chromedp.Run(ctx, chromedp.WaitVisible(`//span[@id="status" and text()="(graded)"]`, chromedp.BySearch),
		chromedp.Text(`#total`, &total, chromedp.ByQuery)); err != nil {
		t.Fatalf("the page did not show the grade: %v", err)
	}
	since := time.Since(finished)
	if since > time.Second || total != "3 / 4" {
		t.Fatalf("the page showed %q %s after grading finished", total, since)
	}
	t.Logf("the page showed the grade %s after grading finished", since)
	// The poll's answer brings no style or script the page's CSP refuses.
	for _, v := range violations() {
		t.Errorf("CSP violation while polling: %s", v)
	}
	// The score is in the primary colour, and the text falls back to a sans
	// serif when the host's font is missing.
	var percent, bar, font string
	if err := chromedp.Run(chrome,
		chromedp.Evaluate(`getComputedStyle(document.getElementById("percent")).color`, &percent),
		chromedp.Evaluate(`getComputedStyle(document.querySelector(".results thead th")).borderBottomColor`, &bar),
		chromedp.Evaluate(`getComputedStyle(document.body).fontFamily`, &font)); err != nil {
		t.Fatal(err)
	}
	if percent != "rgb(107, 31, 128)" || bar != percent || !strings.HasPrefix(font, "Inter, system-ui, ") || !strings.HasSuffix(font, ", sans-serif") {
		t.Errorf("the themed result page: percent in %q, table heads underlined in %q, font %q", percent, bar, font)
	}
	browsertest.CheckPage(t, chrome, srv.URL+"/embed/"+review.ID, "embed-student-results-graded")
}

// TestDraftsAreBounded: a draft keeps an answer of up to 64 KiB (the most
// the API takes) and holds up to 1 MiB as stored; a save past either is
// refused as the page refuses a form it cannot save (422 in the autosave
// status, the exam page with the message otherwise), and the draft keeps
// what it had. Before, each save could fill another question, so the
// draft, which every request reads and every save writes back, grew by up
// to a page body a save.
func TestDraftsAreBounded(t *testing.T) {
	t.Parallel()
	f, rdb, srv := filesFixture(t)
	questions := []assessment.NewQuestion{{Type: assessment.TypeFileUpload, Prompt: "Notes?", Points: 1}}
	for i := range 16 {
		questions = append(questions, assessment.NewQuestion{Type: assessment.TypeEssay, Prompt: fmt.Sprint("Essay ", i), Points: 1})
	}
	exam, qs := f.exam(t, "Essays", questions...)
	upload, essays := qs[0], qs[1:]
	sess := f.session(t, "student-exam", tenancy.RoleStudent, exam.ID)
	base := srv.URL + "/embed/" + sess.ID
	post := func(path string, q assessment.Question, answer string, htmx bool) (int, string) {
		t.Helper()
		return postForm(t, base+path, url.Values{"shown": {q.ID}, q.ID: {answer}}, htmx)
	}
	stored := func() int {
		data, err := rdb.Get(context.Background(), "assessd:embed:draft:"+sess.ID).Bytes()
		if err != nil {
			t.Fatal(err)
		}
		return len(data)
	}
	const refused = "too long to be saved"
	long := strings.Repeat("a", 64<<10)
	if code, body := post("/answers", essays[0], long, true); code != http.StatusOK {
		t.Fatalf("saving an answer of 64 KiB: %d %s", code, body)
	}
	before := stored()
	if code, body := post("/answers", essays[0], long+"a", true); code != http.StatusUnprocessableEntity || !strings.Contains(body, refused) {
		t.Errorf("autosave of an answer past 64 KiB: %d %s", code, body)
	}
	for _, path := range []string{"/answers", "/submit"} {
		if code, body := post(path, essays[0], long+"a", false); code != http.StatusBadRequest || !strings.Contains(body, refused) {
			t.Errorf("POST %s of an answer past 64 KiB: %d %s", path, code, body)
		}
	}
	if stored() != before {
		t.Errorf("the refused answer changed the draft")
	}
	if results, _, err := f.content.Results(f.teacher, exam.ID, assessment.ResultFilter{}, paging.Page{Size: 10}); err != nil || len(results) != 0 {
		t.Errorf("results after a refused submission: %+v, %v", results, err)
	}
	// Answers fill the draft up to 1 MiB, and not a byte more.
	for _, q := range essays[1:15] {
		if code, body := post("/answers", q, long, true); code != http.StatusOK {
			t.Fatalf("saving an answer to %s: %d %s", q.Prompt, code, body)
		}
	}
	last := essays[15]
	rest := 1<<20 - stored() - len(`,"`+last.ID+`":[""]`)
	if code, body := post("/answers", last, long[:rest+1], true); code != http.StatusUnprocessableEntity || !strings.Contains(body, refused) {
		t.Fatalf("filling the draft past 1 MiB: %d %s", code, body)
	}
	if code, body := post("/answers", last, long[:rest], true); code != http.StatusOK || stored() != 1<<20 {
		t.Fatalf("filling the draft to 1 MiB: %d, %d bytes stored %s", code, stored(), body)
	}
	if code, page := uploadPart(t, base, upload.ID, []byte("notes")); code != http.StatusUnprocessableEntity || !strings.Contains(page, refused) {
		t.Fatalf("uploading a file to a full draft: %d %s", code, page)
	}
}
