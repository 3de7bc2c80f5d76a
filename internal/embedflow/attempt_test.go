package embedflow_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/delivery"
	"github.com/assessd/assessd/internal/embedflow"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/browsertest"
	"github.com/assessd/assessd/internal/testkit/redistest"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// attempts is the embed fixture with the delivery service, the database's
// URL (to move time as the schema owner, as the delivery tests do) and an
// exam of four questions.
type attempts struct {
	fixture
	t        *testing.T
	url      string
	rdb      *redis.Client
	delivery *delivery.Service
	srv      *httptest.Server
	examID   string
	// mc, tf, num, text are the exam's questions, in its order.
	mc, tf, num, text assessment.Question
}

func newAttempts(t *testing.T) *attempts {
	t.Helper()
	url := storetest.NewURL(t)
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	rdb := redistest.Client(t)
	f := &attempts{fixture: newFixtureWith(t, rdb, db, nilGenerator), t: t, url: url, rdb: rdb}
	f.delivery = delivery.NewService(db, f.content)
	f.svc.Attempts = f.delivery
	f.svc.Files = media.NewFiles(db, "http://127.0.0.1:8080", 0)
	f.srv = serve(t, f.fixture)
	exam, qs := f.exam(t, "Fractions", assessment.NewQuestion{Type: assessment.TypeMultipleChoice, Prompt: "Which is half?", Points: 2, Config: map[string]any{"options": []any{
		map[string]any{"id": "a", "text": "1/3"}, map[string]any{"id": "b", "text": "1/2", "correct": true},
		map[string]any{"id": "c", "text": "2/3"}, map[string]any{"id": "d", "text": "3/4"}}}},
		assessment.NewQuestion{Type: assessment.TypeTrueFalse, Prompt: "2/4 equals 1/2.", Points: 1, Config: map[string]any{"correct": true}},
		assessment.NewQuestion{Type: assessment.TypeNumeric, Prompt: "3/4 as a decimal?", Points: 1, Config: map[string]any{"correct": 0.75}},
		assessment.NewQuestion{Type: assessment.TypeShortText, Prompt: "Name a fraction equal to 2/4.", Points: 1, Config: map[string]any{"acceptedAnswers": []any{"1/2"}}})
	f.examID, f.mc, f.tf, f.num, f.text = exam.ID, qs[0], qs[1], qs[2], qs[3]
	return f
}

// assign gives the exam to the fixture's student, open from a minute ago
// for two hours with 30 minutes to answer, unless in says otherwise.
func (f *attempts) assign(in delivery.NewAssignment) delivery.Assignment {
	f.t.Helper()
	if in.ExamID == "" {
		in.ExamID = f.examID
	}
	if in.TimeLimitMinutes == nil {
		in.TimeLimitMinutes = new(30)
	}
	if in.OpensAt.IsZero() {
		in.OpensAt = time.Now().Add(-time.Minute)
	}
	if in.ClosesAt.IsZero() {
		in.ClosesAt = time.Now().Add(2 * time.Hour)
	}
	if in.UserIDs == nil {
		in.UserIDs = []string{f.users[tenancy.RoleStudent].ID}
	}
	a, err := f.delivery.CreateAssignment(f.teacher, in)
	if err != nil {
		f.t.Fatal(err)
	}
	return a
}

// session creates a student-exam session of the assignment for the
// fixture's student and returns its page's URL.
func (f *attempts) session(in embedflow.NewSession) (embedflow.Session, string) {
	f.t.Helper()
	in.Flow, in.ActorID = "student-exam", f.users[tenancy.RoleStudent].ID
	sess, err := f.svc.Create(f.teacher, in)
	if err != nil {
		f.t.Fatal(err)
	}
	return sess, f.srv.URL + "/embed/" + sess.ID
}

// student is a context acting as the fixture's student with an API key.
func (f *attempts) student() context.Context {
	u := f.users[tenancy.RoleStudent]
	return tenancy.WithCaller(context.Background(), &tenancy.Caller{Kind: tenancy.KindAPIKey, OrgID: u.OrgID, UserID: u.ID,
		Role: tenancy.RoleStudent, Scopes: tenancy.APIKeyScopes(tenancy.RoleStudent)})
}

// sql runs a statement as the schema owner.
func (f *attempts) sql(query string, args ...any) {
	f.t.Helper()
	conn, err := pgx.Connect(context.Background(), f.url)
	if err != nil {
		f.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), query, args...); err != nil {
		f.t.Fatal(err)
	}
}

// saved reads the attempt's responses as the schema owner, straight from
// attempt_responses: question id to "value/revision", or to
// "files/revision" with files.
func (f *attempts) saved(attemptID string) map[string]string {
	f.t.Helper()
	conn, err := pgx.Connect(context.Background(), f.url)
	if err != nil {
		f.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT question_id,
		CASE WHEN files = '[]' THEN coalesce(value::text, 'null') ELSE files::text END, revision FROM attempt_responses WHERE attempt_id = $1`, attemptID)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]string{}
	for rows.Next() {
		var q, v string
		var rev int
		if err := rows.Scan(&q, &v, &rev); err != nil {
			f.t.Fatal(err)
		}
		out[q] = fmt.Sprintf("%s/%d", v, rev)
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// get fetches a page and returns its status and body.
func get(t *testing.T, target string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, target, nil)
	return send(t, req, false)
}

// answers is a form answering every question of the fixture's exam.
func (f *attempts) answers(mc, tf, num, text string) url.Values {
	return url.Values{"shown": {f.mc.ID, f.tf.ID, f.num.ID, f.text.ID}, f.mc.ID: {mc}, f.tf.ID: {tf}, f.num.ID: {num}, f.text.ID: {text}}
}

var fieldOrder = regexp.MustCompile(`name="shown" value="(qst_[0-9A-Z]+)"`)

// TestAttemptPageShowsTheAttempt: a session with an assignment starts the
// student's attempt on opening; the page shows its questions in its order
// and its options in its order, filled with what was saved, and counts
// down by the server's clock. Opening it again resumes the same attempt.
func TestAttemptPageShowsTheAttempt(t *testing.T) {
	t.Parallel()
	f := newAttempts(t)
	asg := f.assign(delivery.NewAssignment{ShuffleQuestions: true, ShuffleOptions: true})
	// The attempt is started through the API first, its order fixed to
	// one unlike the exam's: the exam's order reversed, and a seed whose
	// option order differs from the exam's.
	a, err := f.delivery.StartAttempt(f.student(), asg.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	reversed := []string{f.text.ID, f.num.ID, f.tf.ID, f.mc.ID}
	for seed := 1; ; seed++ {
		f.sql(`UPDATE attempts SET question_ids = $2, seed = $3 WHERE id = $1`, a.ID, reversed, seed)
		if a, err = f.delivery.Attempt(f.student(), a.ID); err != nil {
			t.Fatal(err)
		}
		if options := optionIDs(a.Questions[3]); !slices.Equal(options, []string{"a", "b", "c", "d"}) {
			break
		}
	}
	for q, v := range map[string]any{f.mc.ID: "b", f.num.ID: 0.75, f.tf.ID: false} {
		if _, err := f.delivery.SaveResponse(f.student(), a.ID, q, delivery.NewResponse{Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	sess, page := f.session(embedflow.NewSession{AssignmentID: asg.ID})
	if sess.ExamID != f.examID {
		t.Fatalf("the session's exam is %q, want the assignment's %s", sess.ExamID, f.examID)
	}
	code, body := get(t, page)
	if code != http.StatusOK {
		t.Fatalf("the attempt page: %d %s", code, body)
	}
	var order []string
	for _, m := range fieldOrder.FindAllStringSubmatch(body, -1) {
		order = append(order, m[1])
	}
	if !slices.Equal(order, reversed) {
		t.Errorf("questions shown in the order %v, want the attempt's %v", order, reversed)
	}
	var shown []string
	for _, m := range regexp.MustCompile(`name="`+f.mc.ID+`" value="([a-d])"`).FindAllStringSubmatch(body, -1) {
		shown = append(shown, m[1])
	}
	if want := optionIDs(a.Questions[3]); !slices.Equal(shown, want) {
		t.Errorf("options shown in the order %v, want the attempt's %v", shown, want)
	}
	for _, want := range []string{
		`<h1><span data-i18n-key="embed.student.title">Exam</span>: Fractions</h1>`,
		`name="` + f.mc.ID + `" value="b" checked`, `name="` + f.tf.ID + `" value="false" checked`,
		`name="` + f.num.ID + `" type="number" step="any" value="0.75"`, `<strong id="answered">3 / 4</strong>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	// The countdown is the attempt's deadline less the server's time.
	left := regexp.MustCompile(`id="timer" data-left="(\d+)"`).FindStringSubmatch(body)
	if want := int(time.Until(a.Deadline).Seconds()); left == nil || !near(left[1], want) {
		t.Errorf("the timer counts down from %v, want about %d s", left, want)
	}
	// A deadline moved by the server moves the countdown: no clock of the
	// page's own decides it.
	f.sql(`UPDATE attempts SET deadline = now() + interval '5 minutes' WHERE id = $1`, a.ID)
	if _, body := get(t, page); !strings.Contains(body, `data-left="300"`) && !strings.Contains(body, `data-left="299"`) {
		t.Errorf("after the deadline moved to 5 minutes from now: %s", regexp.MustCompile(`id="timer"[^>]*`).FindString(body))
	}
	opened, err := f.svc.Open(context.Background(), sess.ID)
	if err != nil || opened.AttemptID != a.ID {
		t.Fatalf("the session holds attempt %q (%v), want the one in progress, %s", opened.AttemptID, err, a.ID)
	}
	if list, _, err := f.delivery.Attempts(f.teacher, asg.ID, delivery.AttemptFilter{}, paging.Page{Size: 10}); err != nil || len(list) != 1 {
		t.Fatalf("attempts after opening the page twice: %d, %v", len(list), err)
	}
}

func optionIDs(q assessment.SheetQuestion) []string {
	var out []string
	for _, o := range q.Options {
		out = append(out, o.ID)
	}
	return out
}

// near reports whether the decimal text is within 5 of want.
func near(text string, want int) bool {
	var n int
	_, err := fmt.Sscan(text, &n)
	return err == nil && n >= want-5 && n <= want+5
}

// TestAttemptAutosaveIsDurable: the page's autosave saves each changed
// answer as the attempt's response, committed in PostgreSQL before the
// page says saved, and nothing in Redis but the session: after FLUSHALL a
// new session's page shows every saved answer.
func TestAttemptAutosaveIsDurable(t *testing.T) {
	t.Parallel()
	f := newAttempts(t)
	asg := f.assign(delivery.NewAssignment{})
	sess, page := f.session(embedflow.NewSession{AssignmentID: asg.ID})
	if code, body := get(t, page); code != http.StatusOK {
		t.Fatalf("opening the page: %d %s", code, body)
	}
	sess, _ = f.svc.Open(context.Background(), sess.ID)
	code, body := postForm(t, page+"/answers", f.answers("b", "true", "0.75", "1/2"), true)
	if code != http.StatusOK || !strings.Contains(body, "Your answers are saved.") || !strings.Contains(body, `<strong id="answered" hx-swap-oob="true">4 / 4</strong>`) {
		t.Fatalf("autosave: %d %s", code, body)
	}
	want := map[string]string{f.mc.ID: `"b"/1`, f.tf.ID: `true/1`, f.num.ID: `0.75/1`, f.text.ID: `"1/2"/1`}
	if got := f.saved(sess.AttemptID); !mapsEqual(got, want) {
		t.Fatalf("attempt_responses after the autosave: %v, want %v", got, want)
	}
	// Only what changed is saved again; an emptied answer is saved empty.
	if code, body := postForm(t, page+"/answers", f.answers("c", "true", "0.75", ""), true); code != http.StatusOK {
		t.Fatalf("second autosave: %d %s", code, body)
	}
	want[f.mc.ID], want[f.text.ID] = `"c"/2`, `null/2`
	if got := f.saved(sess.AttemptID); !mapsEqual(got, want) {
		t.Fatalf("attempt_responses after changing two answers: %v, want %v", got, want)
	}
	a, err := f.delivery.Attempt(f.student(), sess.AttemptID)
	if err != nil || len(a.Responses) != 4 {
		t.Fatalf("the attempt through the delivery service: %+v, %v", a.Responses, err)
	}
	for _, r := range a.Responses {
		if r.QuestionID == f.mc.ID && r.Value != "c" || r.QuestionID == f.num.ID && r.Value != 0.75 || r.QuestionID == f.text.ID && r.Value != nil {
			t.Errorf("response %+v", r)
		}
	}
	// Without JavaScript, Next saves the same way.
	if code, _ := postForm(t, page+"/answers?go=2", f.answers("c", "true", "0.5", ""), false); code != http.StatusSeeOther && code != http.StatusOK {
		t.Fatalf("saving without JavaScript: %d", code)
	}
	want[f.num.ID] = `0.5/2`
	if got := f.saved(sess.AttemptID); !mapsEqual(got, want) {
		t.Fatalf("attempt_responses after a save without JavaScript: %v, want %v", got, want)
	}
	if n, err := f.rdb.Exists(context.Background(), "assessd:embed:draft:"+sess.ID).Result(); err != nil || n != 0 {
		t.Fatalf("a draft in Redis: %d, %v", n, err)
	}

	if err := f.rdb.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, page); code != http.StatusNotFound {
		t.Fatalf("the flushed session's page: %d", code)
	}
	_, again := f.session(embedflow.NewSession{AssignmentID: asg.ID})
	code, body = get(t, again)
	for _, want := range []string{`name="` + f.mc.ID + `" value="c" checked`, `name="` + f.tf.ID + `" value="true" checked`,
		`name="` + f.num.ID + `" type="number" step="any" value="0.5"`, `<strong id="answered">3 / 4</strong>`} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("a new session after FLUSHALL (%d) lacks %s", code, want)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestAttemptLateSaveIsRefused: once the attempt's deadline and grace have
// passed by the server's clock, a save is refused with the catalogue's
// message in the page's words (422 in the autosave status, the page
// otherwise), never a 500, and nothing is saved.
// The page submits when its countdown ends, unless the assignment
// discards what is not submitted in time: that attempt is left for the
// server's deadline to close.
func TestAttemptPageKeepsADiscardedAttemptUnsubmitted(t *testing.T) {
	t.Parallel()
	f := newAttempts(t)
	for overdue, keep := range map[string]bool{delivery.OverdueAutosubmit: false, delivery.OverdueDiscard: true} {
		asg := f.assign(delivery.NewAssignment{Overdue: overdue})
		_, page := f.session(embedflow.NewSession{AssignmentID: asg.ID})
		code, body := get(t, page)
		if code != http.StatusOK || !strings.Contains(body, `id="timer"`) {
			t.Fatalf("overdue %s: %d %s", overdue, code, body)
		}
		if got := strings.Contains(body, `data-keep="true"`); got != keep {
			t.Errorf("overdue %s: the timer keeps the attempt at zero: %v, want %v", overdue, got, keep)
		}
	}
}

func TestAttemptLateSaveIsRefused(t *testing.T) {
	t.Parallel()
	f := newAttempts(t)
	asg := f.assign(delivery.NewAssignment{})
	const closed = "Die Zeit ist um: diese Antwort wurde nicht gespeichert."
	sess, page := f.session(embedflow.NewSession{AssignmentID: asg.ID, Look: embedflow.Look{Language: "de"},
		Strings: map[string]string{"embed.attempt.closed": closed}})
	if code, _ := postForm(t, page+"/answers", f.answers("b", "", "", ""), true); code != http.StatusOK {
		t.Fatalf("a save in time: %d", code)
	}
	sess, _ = f.svc.Open(context.Background(), sess.ID)
	f.sql(`UPDATE attempts SET deadline = now() - interval '1 minute' WHERE id = $1`, sess.AttemptID)
	code, body := postForm(t, page+"/answers", f.answers("c", "true", "", ""), true)
	if code != http.StatusUnprocessableEntity || body != closed {
		t.Errorf("a late autosave: %d %q", code, body)
	}
	code, body = postForm(t, page+"/answers", f.answers("c", "true", "", ""), false)
	if code != http.StatusBadRequest || !strings.Contains(body, `<p class="error" role="alert" data-assessd-event="error" data-assessd-message="`+closed+`">`+closed+`</p>`) ||
		!strings.Contains(body, `<html lang="de"`) {
		t.Errorf("a late save without JavaScript: %d %s", code, body)
	}
	if got := f.saved(sess.AttemptID); !mapsEqual(got, map[string]string{f.mc.ID: `"b"/1`}) {
		t.Errorf("attempt_responses after late saves: %v", got)
	}
	// The page past its time counts nothing down and submits what was saved.
	if _, body := get(t, page); !strings.Contains(body, `data-left="0"`) {
		t.Errorf("the page past the deadline: %s", regexp.MustCompile(`id="timer"[^>]*`).FindString(body))
	}
}

// TestAttemptSubmittedOnce: submitting from the page, again and from two
// tabs at once, submits the attempt once, with the answers saved and the
// form's last change; the page then shows what the exam flow shows after
// submission and names the result for the host.
func TestAttemptSubmittedOnce(t *testing.T) {
	t.Parallel()
	f := newAttempts(t)
	asg := f.assign(delivery.NewAssignment{MaxAttempts: new(3)})
	sess, page := f.session(embedflow.NewSession{AssignmentID: asg.ID})
	if code, _ := postForm(t, page+"/answers", f.answers("b", "true", "", ""), true); code != http.StatusOK {
		t.Fatalf("autosave: %d", code)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, body := postForm(t, page+"/submit", f.answers("b", "true", "0.75", ""), false); code != http.StatusOK {
				t.Errorf("submitting: %d %s", code, body)
			}
		}()
	}
	wg.Wait()
	sess, _ = f.svc.Open(context.Background(), sess.ID)
	a, err := f.delivery.Attempt(f.student(), sess.AttemptID)
	if err != nil || a.Status != delivery.StatusSubmitted || a.SubmittedBy != delivery.ByStudent || a.ResultID == "" {
		t.Fatalf("the attempt after submitting: %+v, %v", a, err)
	}
	conn, err := pgx.Connect(context.Background(), f.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var results int
	var score float64
	if err := conn.QueryRow(context.Background(), `SELECT count(*), coalesce(max(score), 0) FROM results WHERE attempt_id = $1`, a.ID).Scan(&results, &score); err != nil || results != 1 || score != 4 {
		t.Fatalf("results of the attempt: %d scoring %v, %v; want one scoring 4", results, score, err)
	}
	code, body := get(t, page)
	if code != http.StatusOK || !strings.Contains(body, `data-assessd-event="submitted" data-assessd-result-id="`+a.ResultID+`"`) ||
		!strings.Contains(body, "Your answers were submitted.") || strings.Contains(body, `id="exam"`) {
		t.Fatalf("the page after submitting: %d %s", code, body)
	}
	// The session keeps showing its attempt, submitted: no other is
	// started though the assignment allows three.
	if list, _, err := f.delivery.Attempts(f.teacher, asg.ID, delivery.AttemptFilter{}, paging.Page{Size: 10}); err != nil || len(list) != 1 {
		t.Fatalf("attempts: %d, %v", len(list), err)
	}
	if code, body := postForm(t, page+"/answers", f.answers("c", "true", "0.75", ""), true); code != http.StatusUnprocessableEntity ||
		body != "These answers were already submitted: this change was not saved." {
		t.Fatalf("a save after submitting: %d %q", code, body)
	}
}

// TestAttemptUnavailablePages: an assignment not open yet, closed, or whose
// attempts are all used answers a page saying so, in the session's words.
func TestAttemptUnavailablePages(t *testing.T) {
	t.Parallel()
	f := newAttempts(t)
	opens := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Minute)
	later := f.assign(delivery.NewAssignment{OpensAt: opens, ClosesAt: opens.Add(time.Hour)})
	over := f.assign(delivery.NewAssignment{OpensAt: time.Now().Add(-2 * time.Hour), ClosesAt: time.Now().Add(-time.Hour)})
	once := f.assign(delivery.NewAssignment{})
	a, err := f.delivery.StartAttempt(f.student(), once.ID, "")
	if err == nil {
		_, err = f.delivery.SubmitAttempt(f.student(), a.ID)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		asg          delivery.Assignment
		reason, text string
	}{
		{later, "ASSIGNMENT_NOT_OPEN", "This exam is not open yet. It opens on " + opens.Format("2006-01-02 15:04") + " UTC."},
		{over, "ASSIGNMENT_CLOSED", "This exam is closed: the time to take it is over."},
		{once, "ATTEMPTS_EXHAUSTED", "You have used every attempt you have at this exam."},
	} {
		_, page := f.session(embedflow.NewSession{AssignmentID: tt.asg.ID})
		code, body := get(t, page)
		if code != http.StatusConflict || !strings.Contains(body, "This exam cannot be taken now") ||
			!strings.Contains(body, `data-assessd-reason="`+tt.reason+`" data-assessd-message="`+tt.text+`">`+tt.text+`</p>`) {
			t.Errorf("%s: %d %s", tt.reason, code, body)
		}
	}
}

// TestAttemptSessionRules: assignmentId names an assignment of the
// organization given to the actor, a student; examId, optional beside it,
// must be the assignment's exam.
func TestAttemptSessionRules(t *testing.T) {
	t.Parallel()
	f := newAttempts(t)
	student, teacher := f.users[tenancy.RoleStudent].ID, f.users[tenancy.RoleTeacher].ID
	other, err := tenancy.NewService(storeOf(t, f.url)).CreateUser(tenancy.WithCaller(context.Background(), tenancy.SystemCaller(f.users[tenancy.RoleStudent].OrgID)),
		tenancy.NewUser{Email: "other@x.test", Name: "Other", Role: tenancy.RoleStudent})
	if err != nil {
		t.Fatal(err)
	}
	asg := f.assign(delivery.NewAssignment{})
	otherExam, _ := f.exam(t, "Decimals", assessment.NewQuestion{Type: assessment.TypeTrueFalse, Prompt: "0.5 = 1/2", Points: 1, Config: map[string]any{"correct": true}})
	foreignOrg := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(f.foreign.OrgID))
	foreignExam, err := f.content.CreateExam(foreignOrg, assessment.NewExam{Name: "Theirs", Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := f.delivery.CreateAssignment(foreignOrg, delivery.NewAssignment{ExamID: foreignExam.ID, UserIDs: []string{f.foreign.ID},
		OpensAt: time.Now(), ClosesAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		in    embedflow.NewSession
		kind  errs.Kind
		field string
	}{
		{"not given to the actor", embedflow.NewSession{Flow: "student-exam", ActorID: other.ID, AssignmentID: asg.ID}, errs.KindInvalid, "assignmentId"},
		{"a student of another organization", embedflow.NewSession{Flow: "student-exam", ActorID: f.foreign.ID, AssignmentID: asg.ID}, errs.KindNotFound, ""},
		{"an assignment of another organization", embedflow.NewSession{Flow: "student-exam", ActorID: student, AssignmentID: foreign.ID}, errs.KindNotFound, ""},
		{"unknown", embedflow.NewSession{Flow: "student-exam", ActorID: student, AssignmentID: "asg_01M84FMQ3QJKGRXAJD38S3P5SJ"}, errs.KindNotFound, ""},
		{"malformed", embedflow.NewSession{Flow: "student-exam", ActorID: student, AssignmentID: "exm_x"}, errs.KindInvalid, "assignmentId"},
		{"a teacher", embedflow.NewSession{Flow: "student-exam", ActorID: teacher, AssignmentID: asg.ID}, errs.KindInvalid, "actor"},
		{"another flow", embedflow.NewSession{Flow: "authoring", ActorID: teacher, ExamID: f.examID, AssignmentID: asg.ID}, errs.KindInvalid, "assignmentId"},
		{"another exam", embedflow.NewSession{Flow: "student-exam", ActorID: student, ExamID: otherExam.ID, AssignmentID: asg.ID}, errs.KindInvalid, "examId"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.svc.Create(f.teacher, tt.in)
			if e, ok := errs.As(err); !ok || e.Kind != tt.kind || e.Field != tt.field {
				t.Fatalf("err = %v, want kind %d field %q", err, tt.kind, tt.field)
			}
		})
	}
	sess, err := f.svc.Create(f.teacher, embedflow.NewSession{Flow: "student-exam", ActorID: student, ExamID: f.examID, AssignmentID: asg.ID})
	if err != nil || sess.AssignmentID != asg.ID {
		t.Fatalf("with the assignment's own exam: %+v, %v", sess, err)
	}
	// The session acts with the attempt scopes only.
	c, err := f.svc.Caller(context.Background(), sess)
	if err != nil || !c.HasScope(tenancy.ScopeAttemptsWrite) || !c.HasScope(tenancy.ScopeAttemptsRead) || c.HasScope(tenancy.ScopeExamsRead) {
		t.Fatalf("caller %+v, %v", c, err)
	}
}

func storeOf(t *testing.T, url string) *store.DB {
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// TestAttemptInChromium takes an assigned exam in Chromium on a phone's
// width: answer, see the autosave say saved (and PostgreSQL hold it),
// reload and find the answers and the server's countdown, submit, and the
// host hears of the result.
func TestAttemptInChromium(t *testing.T) {
	t.Parallel()
	f := newAttempts(t)
	asg := f.assign(delivery.NewAssignment{})
	host := hostPage(t)
	sess, src := f.session(embedflow.NewSession{AssignmentID: asg.ID, AllowedOrigins: []string{host}})
	chrome := browsertest.NewChrome(t)
	chromedp.ListenTarget(chrome, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok && d.Type == page.DialogTypeConfirm {
			go func() { _ = chromedp.Run(chrome, page.HandleJavaScriptDialog(true)) }()
		}
	})
	var shot []byte
	err := chromedp.Run(chrome,
		chromedp.EmulateViewport(360, 900),
		chromedp.Navigate(src),
		chromedp.WaitVisible(`input[name="`+f.num.ID+`"]`, chromedp.ByQuery),
		chromedp.Click(`input[name="`+f.mc.ID+`"][value=b]`, chromedp.ByQuery),
		chromedp.SendKeys(`input[name="`+f.num.ID+`"]`, "0.75", chromedp.ByQuery),
		chromedp.Poll(`document.getElementById("autosave").textContent === "Your answers are saved." && document.getElementById("answered").textContent === "2 / 4"`,
			nil, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.CaptureScreenshot(&shot),
	)
	if err != nil {
		t.Fatalf("answering: %v", err)
	}
	browsertest.SaveArtifact(t, "embed-attempt-saved-360.png", shot)
	sess, _ = f.svc.Open(context.Background(), sess.ID)
	if got := f.saved(sess.AttemptID); got[f.mc.ID] != `"b"/1` || !strings.HasPrefix(got[f.num.ID], "0.75/") {
		t.Fatalf("attempt_responses when the page said saved: %v", got)
	}
	var timer, num string
	var checked bool
	err = chromedp.Run(chrome,
		chromedp.Reload(),
		chromedp.WaitVisible(`#timer`, chromedp.ByQuery),
		chromedp.Sleep(1200*time.Millisecond),
		chromedp.Text(`#timer`, &timer, chromedp.ByQuery),
		chromedp.Value(`input[name="`+f.num.ID+`"]`, &num, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('input[name="`+f.mc.ID+`"][value=b]').checked`, &checked),
		chromedp.CaptureScreenshot(&shot),
	)
	if err != nil || !strings.HasPrefix(timer, "29:") || num != "0.75" || !checked {
		t.Fatalf("after a reload: %v, timer %q, numeric %q, option b checked %v", err, timer, num, checked)
	}
	browsertest.SaveArtifact(t, "embed-attempt-reloaded-360.png", shot)
	browsertest.CheckPage(t, chrome, src, "embed-attempt")
	var main string
	err = chromedp.Run(chrome,
		chromedp.EmulateViewport(360, 900),
		chromedp.Navigate(src),
		chromedp.WaitVisible(`input[name="`+f.num.ID+`"]`, chromedp.ByQuery),
		chromedp.Click(`.exam-nav button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.notice`, chromedp.ByQuery),
		chromedp.Text(`main`, &main, chromedp.ByQuery),
		chromedp.CaptureScreenshot(&shot),
	)
	if err != nil || !strings.Contains(main, "Your answers were submitted.") {
		t.Fatalf("submitting: %v, %s", err, main)
	}
	browsertest.SaveArtifact(t, "embed-attempt-submitted-360.png", shot)
	a, err := f.delivery.Attempt(f.student(), sess.AttemptID)
	if err != nil || a.Status != delivery.StatusSubmitted {
		t.Fatalf("the attempt after submitting: %+v, %v", a, err)
	}
	if msgs := hostMessages(t, chrome, host, src, "submitted"); !strings.Contains(msgs, `"resultId":"`+a.ResultID+`"`) {
		t.Fatalf("the host was not told the result: %s", msgs)
	}
	// Its one attempt used, the assignment cannot be taken again.
	_, again := f.session(embedflow.NewSession{AssignmentID: asg.ID})
	browsertest.CheckPage(t, chrome, again, "embed-attempt-exhausted")
}

// TestAttemptFileAnswer: a file uploaded to a file question of an attempt
// is saved as the response's files; removed, the response is saved empty.
func TestAttemptFileAnswer(t *testing.T) {
	t.Parallel()
	f := newAttempts(t)
	exam, qs := f.exam(t, "Leaves", assessment.NewQuestion{Type: assessment.TypeFileUpload, Prompt: "Photograph a leaf.", Points: 1})
	asg := f.assign(delivery.NewAssignment{ExamID: exam.ID})
	sess, page := f.session(embedflow.NewSession{AssignmentID: asg.ID})
	code, body := uploadPart(t, page, qs[0].ID, []byte("a leaf, in words"))
	fileURL := regexp.MustCompile(`href="(http://127\.0\.0\.1:8080/media/[^"]+)"`).FindStringSubmatch(body)
	if code != http.StatusOK || fileURL == nil {
		t.Fatalf("uploading: %d %s", code, body)
	}
	sess, _ = f.svc.Open(context.Background(), sess.ID)
	if got := f.saved(sess.AttemptID); got[qs[0].ID] != `["`+fileURL[1]+`"]/1` {
		t.Fatalf("attempt_responses after the upload: %v", got)
	}
	if code, body := postForm(t, page+"/files/"+qs[0].ID+"/remove", url.Values{"url": {fileURL[1]}}, true); code != http.StatusOK ||
		!strings.Contains(body, "No file uploaded yet.") {
		t.Fatalf("removing: %d %s", code, body)
	}
	if got := f.saved(sess.AttemptID); got[qs[0].ID] != `null/2` {
		t.Fatalf("attempt_responses after the removal: %v", got)
	}
}
