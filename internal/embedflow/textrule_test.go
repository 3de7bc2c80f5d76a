package embedflow_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/embedflow"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/testkit/redistest"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// TestFormsRefuseTextTheDatabaseCannotHold posts a NUL and invalid UTF-8,
// which PostgreSQL cannot store as text, to the student's and the author's
// forms: each is refused as the field's mistake (400, naming the rule),
// the draft keeps what it had and no result or question is recorded.
func TestFormsRefuseTextTheDatabaseCannotHold(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	f := newFixtureWith(t, redistest.Client(t), db, nilGenerator)
	content := assessment.NewService(db)
	srv := serve(t, f)
	exam, err := content.CreateExam(f.teacher, assessment.NewExam{Name: "Rivers", Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := content.CreateQuestion(f.teacher, exam.ID, assessment.NewQuestion{Type: assessment.TypeShortText, Prompt: "Longest river?", Points: 1,
		Config: map[string]any{"acceptedAnswers": []any{"Nile"}}})
	if err != nil {
		t.Fatal(err)
	}
	post := func(sess embedflow.Session, path string, form url.Values, htmx bool) (int, string) {
		t.Helper()
		return postForm(t, srv.URL+"/embed/"+sess.ID+path, form, htmx)
	}
	student, err := f.svc.Create(f.teacher, embedflow.NewSession{Flow: "student-exam", ActorID: f.users[tenancy.RoleStudent].ID, ExamID: exam.ID})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := post(student, "/answers", url.Values{"shown": {q.ID}, q.ID: {"Nile"}}, true); code != http.StatusOK {
		t.Fatalf("saving a fine answer: %d %s", code, body)
	}
	const refused = "cannot be saved"
	for _, bad := range []string{"Ni\x00le", "Ni\xffle"} {
		form := url.Values{"shown": {q.ID}, q.ID: {bad}}
		// The autosave's status shows why (htmx swaps a 422 in).
		if code, body := post(student, "/answers", form, true); code != http.StatusUnprocessableEntity || !strings.HasPrefix(body, "An answer holds") {
			t.Errorf("autosave of %q: %d %s", bad, code, body)
		}
		for _, path := range []string{"/answers", "/submit"} {
			if code, body := post(student, path, form, false); code != http.StatusBadRequest || !strings.Contains(body, refused) {
				t.Errorf("POST %s of %q: %d %s", path, bad, code, body)
			}
		}
	}
	res, err := http.Get(srv.URL + "/embed/" + student.ID)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(page), `value="Nile"`) {
		t.Errorf("the draft lost its answer after the refused posts:\n%s", page)
	}
	if results, _, err := content.Results(f.teacher, exam.ID, assessment.ResultFilter{}, paging.Page{Size: 10}); err != nil || len(results) != 0 {
		t.Errorf("results after refused submissions: %+v, %v", results, err)
	}

	author, err := f.svc.Create(f.teacher, embedflow.NewSession{Flow: "authoring", ActorID: f.users[tenancy.RoleTeacher].ID, ExamID: exam.ID})
	if err != nil {
		t.Fatal(err)
	}
	// A question's card comes back as sent, the rule beside the field (422,
	// as for any refused save).
	for _, path := range []string{"/questions", "/questions/" + q.ID} {
		code, body := post(author, path, url.Values{"type": {"short_text"}, "prompt": {"Longest\x00 river?"}, "points": {"1"}, "config.acceptedAnswers": {"Nile"}}, true)
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, "prompt: must not contain NUL characters") {
			t.Errorf("POST %s with a NUL prompt: %d %s", path, code, body)
		}
	}
	if code, body := post(author, "/questions/"+q.ID+"/regenerate", url.Values{"instructions": {"\xffshorter"}}, false); code != http.StatusBadRequest ||
		!strings.Contains(body, "instructions: must be valid UTF-8") {
		t.Errorf("regenerating with invalid UTF-8 instructions: %d %s", code, body)
	}
	teacher, err := f.svc.Create(f.teacher, embedflow.NewSession{Flow: "generate-exam", ActorID: f.users[tenancy.RoleTeacher].ID})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := post(teacher, "/generate", url.Values{"subject": {"Rivers\x00"}, "studentLevel": {"7"}}, false); code != http.StatusBadRequest ||
		!strings.Contains(body, "subject: must not contain NUL characters") {
		t.Errorf("generating with a NUL subject: %d %s", code, body)
	}
	if got, err := content.Question(f.teacher, exam.ID, q.ID); err != nil || got.Prompt != "Longest river?" {
		t.Errorf("question after refused edits: %+v, %v", got, err)
	}
}
