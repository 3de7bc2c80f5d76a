package app_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

func TestEmbedSessionsAPI(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn, other := e.NewTenant("US", "pro"), e.NewTenant("DE", "pro")
	teacher := tn.Keys[tenancy.RoleTeacher]

	r := e.Do("POST", "/embed-sessions", teacher, map[string]any{
		"flow": "generate-exam", "actor": tn.Users[tenancy.RoleTeacher].ID,
		"theme": map[string]any{"strings": map[string]any{"account.attributes.studentLevel-name": "Grade"},
			"colors": map[string]any{"primary": "#6b1f80", "background": "#fffdf5", "text": "#202020"}, "fontFamily": "Georgia, serif", "radius": 8},
		"presets":        map[string]any{"studentLevel": "7", "hideStudentLevel": true},
		"allowedOrigins": []string{"https://lms.example.com"},
	}).Must(t, http.StatusOK)
	url, _ := r.Body["url"].(string)
	if !strings.HasPrefix(r.Body["id"].(string), "emb_") || url != e.Srv.URL+"/embed/"+r.Body["id"].(string) || r.Body["expiresAt"] == nil {
		t.Fatalf("session %s", r.Raw)
	}
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(page), "--accent:#6b1f80;") || !strings.Contains(string(page), "--text:#202020;--background:#fffdf5") ||
		!strings.Contains(string(page), "--radius:8px") {
		t.Fatal("the page does not carry theme.colors and theme.radius")
	}
	for field, colors := range map[string]map[string]any{
		"theme.colors.primary": {"primary": "#ffcc00"}, "theme.colors.text": {"text": "#eeeeee"}, "theme.colors.background": {"background": "white"},
	} {
		if r := e.Do("POST", "/embed-sessions", teacher, map[string]any{"flow": "generate-exam", "actor": tn.Users[tenancy.RoleTeacher].ID,
			"theme": map[string]any{"colors": colors}}).Must(t, http.StatusBadRequest); r.Field() != field {
			t.Errorf("%v: %s", colors, r.Raw)
		}
	}
	if res.StatusCode != http.StatusOK || !strings.Contains(string(page), "Generate an exam") ||
		!strings.Contains(res.Header.Get("Content-Security-Policy"), "frame-ancestors https://lms.example.com") {
		t.Fatalf("embed page: %d %s", res.StatusCode, res.Header.Get("Content-Security-Policy"))
	}

	exam := e.Do("POST", "/exams", teacher, map[string]any{"name": "Quiz", "language": "en"}).Must(t, http.StatusOK)
	e.Do("POST", "/embed-sessions", teacher, map[string]any{"flow": "student-exam", "actor": tn.Users[tenancy.RoleStudent].ID,
		"examId": exam.Body["id"]}).Must(t, http.StatusOK)
	foreignExam := e.Do("POST", "/exams", other.Keys[tenancy.RoleTeacher], map[string]any{"name": "Theirs", "language": "de"}).Must(t, http.StatusOK)
	e.Do("POST", "/embed-sessions", teacher, map[string]any{"flow": "student-exam", "actor": tn.Users[tenancy.RoleStudent].ID,
		"examId": foreignExam.Body["id"]}).Must(t, http.StatusNotFound)
	e.Do("POST", "/embed-sessions", teacher, map[string]any{"flow": "student-exam", "actor": other.Users[tenancy.RoleStudent].ID,
		"examId": exam.Body["id"]}).Must(t, http.StatusNotFound)
	if r := e.Do("POST", "/embed-sessions", teacher, map[string]any{"flow": "quiz", "actor": "x"}).Must(t, http.StatusBadRequest); r.Field() != "flow" {
		t.Fatalf("unknown flow: %s", r.Raw)
	}
	e.Do("POST", "/embed-sessions", tn.Keys[tenancy.RoleStudent], map[string]any{"flow": "generate-exam",
		"actor": tn.Users[tenancy.RoleTeacher].ID}).Must(t, http.StatusForbidden)
	if res, _ := http.Get(e.Srv.URL + "/embed/emb_" + strings.Repeat("c", 32)); res == nil || res.StatusCode != http.StatusNotFound {
		t.Fatal("an unknown session does not answer 404")
	}
}

// TestEmbedSessionOfAnAssignment: POST /embed-sessions takes assignmentId
// for the student-exam flow; the page is the student's attempt, whose
// saves are the attempt's responses. An assignment not given to the actor,
// a student of another organization and another exam than the
// assignment's are refused.
func TestEmbedSessionOfAnAssignment(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn, other := e.NewTenant("US", "pro"), e.NewTenant("DE", "pro")
	teacher, student := tn.Keys[tenancy.RoleTeacher], tn.Users[tenancy.RoleStudent].ID
	exam := apptest.Str(e.Do("POST", "/exams", teacher, map[string]any{"name": "Quiz", "language": "en"}).Must(t, http.StatusOK).Body, "id")
	q := apptest.Str(e.Do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{"type": "true_false", "prompt": "Water is wet.",
		"points": 1, "config": map[string]any{"correct": true}}).Must(t, http.StatusOK).Body, "id")
	asg := apptest.Str(e.Do("POST", "/assignments", teacher, map[string]any{"examId": exam, "userIds": []string{student},
		"opensAt": time.Now().Add(-time.Minute).Format(time.RFC3339), "closesAt": time.Now().Add(time.Hour).Format(time.RFC3339)}).
		Must(t, http.StatusOK).Body, "id")
	id := e.EmbedSession(teacher, map[string]any{"flow": "student-exam", "actor": student, "assignmentId": asg})
	res, err := http.PostForm(e.Srv.URL+"/embed/"+id+"/answers", url.Values{"shown": {q}, q: {"true"}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(page), "Water is wet.") || !strings.Contains(string(page), `value="true" checked`) {
		t.Fatalf("the attempt page after a save: %d %s", res.StatusCode, page)
	}
	attempts := e.Do("GET", "/assignments/"+asg+"/attempts", teacher, nil).Must(t, http.StatusOK).Body["attempts"].([]any)
	att := apptest.Str(attempts[0].(map[string]any), "id")
	responses := e.Do("GET", "/attempts/"+att, tn.Keys[tenancy.RoleStudent], nil).Must(t, http.StatusOK).Body["responses"].([]any)
	if len(attempts) != 1 || len(responses) != 1 || responses[0].(map[string]any)["value"] != true {
		t.Fatalf("attempts %v, responses %v", attempts, responses)
	}

	e.Do("POST", "/embed-sessions", teacher, map[string]any{"flow": "student-exam", "actor": other.Users[tenancy.RoleStudent].ID,
		"assignmentId": asg}).Must(t, http.StatusNotFound)
	admin := tn.Users[tenancy.RoleAdmin].ID
	if r := e.Do("POST", "/embed-sessions", teacher, map[string]any{"flow": "student-exam", "actor": admin,
		"assignmentId": asg}).Must(t, http.StatusBadRequest); r.Field() != "actor" {
		t.Fatalf("an admin as the student: %s", r.Raw)
	}
	unassigned := apptest.Str(e.Do("POST", "/users", tn.Keys[tenancy.RoleAdmin], map[string]any{"email": "new@x.test", "name": "New",
		"role": "student"}).Must(t, http.StatusOK).Body, "id")
	if r := e.Do("POST", "/embed-sessions", teacher, map[string]any{"flow": "student-exam", "actor": unassigned,
		"assignmentId": asg}).Must(t, http.StatusBadRequest); r.Field() != "assignmentId" {
		t.Fatalf("an assignment not given to the actor: %s", r.Raw)
	}
	another := apptest.Str(e.Do("POST", "/exams", teacher, map[string]any{"name": "Other", "language": "en"}).Must(t, http.StatusOK).Body, "id")
	if r := e.Do("POST", "/embed-sessions", teacher, map[string]any{"flow": "student-exam", "actor": student, "examId": another,
		"assignmentId": asg}).Must(t, http.StatusBadRequest); r.Field() != "examId" {
		t.Fatalf("another exam than the assignment's: %s", r.Raw)
	}
}

// TestEmbedFormsAnswerWhatRefusedThem: the generate form shows a refusal
// with its own status. A teacher made a student while the session is open
// may no longer create exams: 403, not the 400 of a form to fix.
func TestEmbedFormsAnswerWhatRefusedThem(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	actor := tn.Users[tenancy.RoleTeacher].ID
	generating := e.EmbedSession(tn.Keys[tenancy.RoleTeacher], map[string]any{"flow": "generate-exam", "actor": actor})
	form := url.Values{"subject": {"Maths"}, "studentLevel": {"7"}, "durationMinutes": {"30"}, "questionTypes": {"true_false"}}
	if p := e.NewBrowser().Post(e.Srv.URL+"/embed/"+generating+"/generate", url.Values{"subject": {""}}); p.Status != http.StatusBadRequest {
		t.Fatalf("a form without a subject: %d", p.Status)
	}
	e.Do("PATCH", "/users/"+actor, tn.Keys[tenancy.RoleOwner], `{"role":"student"}`).Must(t, http.StatusOK)
	if p := e.NewBrowser().Post(e.Srv.URL+"/embed/"+generating+"/generate", form); p.Status != http.StatusForbidden {
		t.Fatalf("the form after its actor became a student: %d\n%s", p.Status, p.Body)
	}
}
