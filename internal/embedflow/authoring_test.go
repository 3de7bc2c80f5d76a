package embedflow_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/embedflow"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/testkit/browsertest"
	"github.com/assessd/assessd/internal/testkit/redistest"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

func TestAuthoringFlow(t *testing.T) {
	t.Parallel()
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
	// The add card is the short_text form: accepted answers one per line.
	if page := get(); !strings.Contains(page, `name="config.options.0.text"`) || !strings.Contains(page, `name="config.options.0.correct"`) {
		t.Fatal("the multiple-choice card has no option fields with a correct marker")
	}
	if code, _ := post("/questions", url.Values{"type": {"short_text"}, "prompt": {"Capital of Peru?"}, "points": {"2"},
		"config.acceptedAnswers": {"Lima\n\n Lima, Peru \n"}}); code != http.StatusOK || !strings.Contains(get(), "Capital of Peru?") {
		t.Fatalf("adding a question: %d", code)
	}
	qs, _, _ := content.Questions(f.teacher, exam.ID, paging.Page{Size: 10})
	if got := qs[len(qs)-1].Config["acceptedAnswers"]; fmt.Sprint(got) != "[Lima Lima, Peru]" {
		t.Fatalf("accepted answers from the form: %v", got)
	}
	// The API's validator refuses an option without text; the card comes
	// back with the message beside that input, what was typed kept.
	code, body := post("/questions/"+mc.ID, url.Values{"prompt": {"Which is not a capital?"}, "points": {"1"},
		"config.options.0.id": {"a"}, "config.options.0.text": {"Paris"}, "config.options.1.id": {"b"}, "config.options.1.text": {""}, "config.options.1.correct": {"true"},
		"config.options.2.id": {""}, "config.options.2.text": {"Marseille"}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, `aria-describedby="q-`) && !strings.Contains(body, `-error">`) ||
		!strings.Contains(body, "Marseille") || !strings.Contains(body, `class="field-error"`) {
		t.Fatalf("option without text: %d %s", code, body)
	}
	if code, body := post("/questions/"+mc.ID, url.Values{"prompt": {"Which is not a capital?"}, "points": {"1"},
		"config.options.0.id": {"a"}, "config.options.0.text": {"Paris"}, "config.options.1.id": {"b"}, "config.options.1.text": {"Lyon"}, "config.options.1.correct": {"true"},
		"config.options.2.id": {""}, "config.options.2.text": {"Marseille"}, "config.options.3.id": {""}, "config.options.3.text": {""}}); code != http.StatusOK {
		t.Fatalf("saving options: %d %s", code, regexp.MustCompile(`(?s)<p class="(field-)?error".*?</p>`).FindAllString(body, -1))
	}
	if q, _ := content.Question(f.teacher, exam.ID, mc.ID); fmt.Sprint(q.Config["options"]) != "[map[id:a text:Paris] map[correct:true id:b text:Lyon] map[id:o1 text:Marseille]]" {
		t.Fatalf("options from the form: %v", q.Config["options"])
	}
	if code, body := post("/questions/"+tf.ID, url.Values{"prompt": {"x"}, "points": {"1"}, "rawConfig": {"on"}, "config": {"not json"}}); code != http.StatusUnprocessableEntity || !strings.Contains(body, "JSON object") {
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
	violations := browsertest.WatchCSP(t, ctx)
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

	// Keyboard reordering: ArrowDown on the first handle moves the question
	// down, saves the order and says so to screen readers.
	before, _, _ := content.Questions(f.teacher, exam.ID, paging.Page{Size: 10})
	var announced string
	err = chromedp.Run(ctx, chromedp.Navigate(base), chromedp.Focus(`.handle`, chromedp.ByQuery), chromedp.KeyEvent(kb.ArrowDown),
		chromedp.Poll(`document.getElementById("order-status").textContent !== ""`, nil),
		chromedp.Text(`#order-status`, &announced, chromedp.ByQuery), chromedp.Sleep(500*time.Millisecond))
	after, _, _ := content.Questions(f.teacher, exam.ID, paging.Page{Size: 10})
	if err != nil || after[0].ID != before[1].ID || after[1].ID != before[0].ID || !strings.Contains(announced, "2") {
		t.Fatalf("keyboard reorder: %v, announced %q, order %v → %v", err, announced, ids(before), ids(after))
	}
	// A refused save swaps only its card, with the message beside the
	// option left empty (htmx, no page load).
	var fieldError string
	err = chromedp.Run(ctx, chromedp.Navigate(base),
		chromedp.Evaluate(`window.marker = 1; document.querySelector("#q-`+mc.ID+` input[name='config.options.1.text']").value = ""`, nil),
		chromedp.Click(`#q-`+mc.ID+` .question-form button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#q-`+mc.ID+` .field-error`, chromedp.ByQuery),
		chromedp.Text(`#q-`+mc.ID+` .field-error`, &fieldError, chromedp.ByQuery))
	var kept bool
	if err == nil {
		err = chromedp.Run(ctx, chromedp.Evaluate(`window.marker === 1 && document.querySelector("#q-`+mc.ID+` input[name='config.options.1.text']").getAttribute("aria-invalid") === "true"`, &kept))
	}
	if err != nil || fieldError == "" || !kept {
		t.Fatalf("inline validation: %v, %q, in place %v", err, fieldError, kept)
	}
	// Nothing htmx swapped in (a saved card, a refused one) broke the CSP.
	for _, v := range violations() {
		t.Errorf("CSP violation while editing: %s", v)
	}
	browsertest.CheckPage(t, ctx, base+"?type=numeric", "embed-authoring-numeric")
}

func ids(qs []assessment.Question) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.ID
	}
	return out
}

// TestAuthoringAFullExam: an exam of assessment.MaxQuestions questions is
// shown and reordered whole, though it is more than the API's largest
// page of questions.
func TestAuthoringAFullExam(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	f := newFixtureWith(t, redistest.Client(t), db, nilGenerator)
	content := assessment.NewService(db)
	srv := serve(t, f)
	exam, err := content.CreateExam(f.teacher, assessment.NewExam{Name: "Long", Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	var last assessment.Question
	for i := range assessment.MaxQuestions {
		if last, err = content.CreateQuestion(f.teacher, exam.ID, assessment.NewQuestion{Type: assessment.TypeTrueFalse,
			Prompt: fmt.Sprintf("Statement %d.", i+1), Points: 1, Config: map[string]any{"correct": true}}); err != nil {
			t.Fatal(err)
		}
	}
	sess, err := f.svc.Create(f.teacher, embedflow.NewSession{Flow: "authoring", ActorID: f.users[tenancy.RoleTeacher].ID, ExamID: exam.ID})
	if err != nil {
		t.Fatal(err)
	}
	base := srv.URL + "/embed/" + sess.ID
	res, err := http.PostForm(base+"/questions/"+last.ID+"/move", url.Values{"to": {"up"}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	lastPrompt, before := fmt.Sprintf("Statement %d.", assessment.MaxQuestions), fmt.Sprintf("Statement %d.", assessment.MaxQuestions-1)
	at, beforeAt := strings.Index(string(page), lastPrompt), strings.Index(string(page), before)
	if res.StatusCode != http.StatusOK || at < 0 || beforeAt < 0 || at > beforeAt {
		t.Fatalf("moving the last of %d questions up: %d; its prompt at %d, the one it passed at %d", assessment.MaxQuestions, res.StatusCode, at, beforeAt)
	}
}

// TestAuthoringTypeTooDeepForAForm: a type whose configuration nests rows
// three levels deep is edited as JSON, on its question's card and on the
// add card (?type=), and a save reads the JSON. Before, such a schema got
// a form, which tripled with each level.
func TestAuthoringTypeTooDeepForAForm(t *testing.T) {
	t.Parallel()
	f := newFixture(t, redistest.Client(t))
	srv := serve(t, f)
	var schema map[string]any
	rows := func(items string) string {
		return `{"type": "array", "items": {"type": "object", "properties": ` + items + `}}`
	}
	if err := json.Unmarshal([]byte(`{"type": "object", "properties": {"a": `+rows(`{"b": `+rows(`{"c": `+rows(`{"text": {"type": "string"}}`)+`}`)+`}`)+`}}`), &schema); err != nil {
		t.Fatal(err)
	}
	typ, err := f.content.CreateQuestionType(f.teacher, assessment.NewTypeDef{Key: "nested", Name: "Nested", GradingEnabled: true, ConfigSchema: schema})
	if err != nil {
		t.Fatal(err)
	}
	exam, qs := f.exam(t, "Trees", assessment.NewQuestion{Type: typ.ID, Prompt: "Draw a tree.", Points: 1, Config: map[string]any{}})
	base := srv.URL + "/embed/" + f.session(t, "authoring", tenancy.RoleTeacher, exam.ID).ID
	res, err := http.Get(base + "?type=" + typ.ID)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if n := strings.Count(string(page), `<input type="hidden" name="rawConfig" value="on">`); n != 2 || strings.Contains(string(page), `name="config.a.`) {
		t.Fatalf("%d cards of the type edited as JSON only, want 2:\n%s", n, page)
	}
	code, _ := postForm(t, base+"/questions/"+qs[0].ID, url.Values{"prompt": {"Draw a tree."}, "points": {"1"}, "rawConfig": {"on"},
		"config": {`{"a": [{"b": [{"c": [{"text": "leaf"}]}]}]}`}}, false)
	if got, err := f.content.Question(f.teacher, exam.ID, qs[0].ID); err != nil || fmt.Sprint(got.Config) != "map[a:[map[b:[map[c:[map[text:leaf]]]]]]]" {
		t.Fatalf("saved %d: %v, %v", code, got.Config, err)
	}
}
