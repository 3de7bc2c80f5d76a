package app_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/assessd/assessd/tenancy"
)

func TestEmbedSessionsAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn, other := e.newTenant("US", "pro"), e.newTenant("DE", "pro")
	teacher := tn.keys[tenancy.RoleTeacher]

	r := e.do("POST", "/embed-sessions", teacher, map[string]any{
		"flow": "generate-exam", "actor": tn.users[tenancy.RoleTeacher].ID,
		"theme": map[string]any{"strings": map[string]any{"account.attributes.studentLevel-name": "Grade"},
			"colors": map[string]any{"primary": "#6b1f80", "background": "#fffdf5", "text": "#202020"}, "fontFamily": "Georgia, serif", "radius": 8},
		"presets":        map[string]any{"studentLevel": "7", "hideStudentLevel": true},
		"allowedOrigins": []string{"https://lms.example.com"},
	}).must(t, http.StatusOK)
	url, _ := r.body["url"].(string)
	if !strings.HasPrefix(r.body["id"].(string), "emb_") || url != e.srv.URL+"/embed/"+r.body["id"].(string) || r.body["expiresAt"] == nil {
		t.Fatalf("session %s", r.raw)
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
		if r := e.do("POST", "/embed-sessions", teacher, map[string]any{"flow": "generate-exam", "actor": tn.users[tenancy.RoleTeacher].ID,
			"theme": map[string]any{"colors": colors}}).must(t, http.StatusBadRequest); r.field() != field {
			t.Errorf("%v: %s", colors, r.raw)
		}
	}
	if res.StatusCode != http.StatusOK || !strings.Contains(string(page), "Generate an exam") ||
		!strings.Contains(res.Header.Get("Content-Security-Policy"), "frame-ancestors https://lms.example.com") {
		t.Fatalf("embed page: %d %s", res.StatusCode, res.Header.Get("Content-Security-Policy"))
	}

	exam := e.do("POST", "/exams", teacher, map[string]any{"name": "Quiz", "language": "en"}).must(t, http.StatusOK)
	e.do("POST", "/embed-sessions", teacher, map[string]any{"flow": "student-exam", "actor": tn.users[tenancy.RoleStudent].ID,
		"examId": exam.body["id"]}).must(t, http.StatusOK)
	foreignExam := e.do("POST", "/exams", other.keys[tenancy.RoleTeacher], map[string]any{"name": "Theirs", "language": "de"}).must(t, http.StatusOK)
	e.do("POST", "/embed-sessions", teacher, map[string]any{"flow": "student-exam", "actor": tn.users[tenancy.RoleStudent].ID,
		"examId": foreignExam.body["id"]}).must(t, http.StatusNotFound)
	e.do("POST", "/embed-sessions", teacher, map[string]any{"flow": "student-exam", "actor": other.users[tenancy.RoleStudent].ID,
		"examId": exam.body["id"]}).must(t, http.StatusNotFound)
	if r := e.do("POST", "/embed-sessions", teacher, map[string]any{"flow": "quiz", "actor": "x"}).must(t, http.StatusBadRequest); r.field() != "flow" {
		t.Fatalf("unknown flow: %s", r.raw)
	}
	e.do("POST", "/embed-sessions", tn.keys[tenancy.RoleStudent], map[string]any{"flow": "generate-exam",
		"actor": tn.users[tenancy.RoleTeacher].ID}).must(t, http.StatusForbidden)
	if res, _ := http.Get(e.srv.URL + "/embed/emb_" + strings.Repeat("c", 32)); res == nil || res.StatusCode != http.StatusNotFound {
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
	e := newEnv(t)
	tn, other := e.newTenant("US", "pro"), e.newTenant("DE", "pro")
	teacher, student := tn.keys[tenancy.RoleTeacher], tn.users[tenancy.RoleStudent].ID
	exam := str(e.do("POST", "/exams", teacher, map[string]any{"name": "Quiz", "language": "en"}).must(t, http.StatusOK).body, "id")
	q := str(e.do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{"type": "true_false", "prompt": "Water is wet.",
		"points": 1, "config": map[string]any{"correct": true}}).must(t, http.StatusOK).body, "id")
	asg := str(e.do("POST", "/assignments", teacher, map[string]any{"examId": exam, "userIds": []string{student},
		"opensAt": time.Now().Add(-time.Minute).Format(time.RFC3339), "closesAt": time.Now().Add(time.Hour).Format(time.RFC3339)}).
		must(t, http.StatusOK).body, "id")
	id := e.embedSession(teacher, map[string]any{"flow": "student-exam", "actor": student, "assignmentId": asg})
	res, err := http.PostForm(e.srv.URL+"/embed/"+id+"/answers", url.Values{"shown": {q}, q: {"true"}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(page), "Water is wet.") || !strings.Contains(string(page), `value="true" checked`) {
		t.Fatalf("the attempt page after a save: %d %s", res.StatusCode, page)
	}
	attempts := e.do("GET", "/assignments/"+asg+"/attempts", teacher, nil).must(t, http.StatusOK).body["attempts"].([]any)
	att := str(attempts[0].(map[string]any), "id")
	responses := e.do("GET", "/attempts/"+att, tn.keys[tenancy.RoleStudent], nil).must(t, http.StatusOK).body["responses"].([]any)
	if len(attempts) != 1 || len(responses) != 1 || responses[0].(map[string]any)["value"] != true {
		t.Fatalf("attempts %v, responses %v", attempts, responses)
	}

	e.do("POST", "/embed-sessions", teacher, map[string]any{"flow": "student-exam", "actor": other.users[tenancy.RoleStudent].ID,
		"assignmentId": asg}).must(t, http.StatusNotFound)
	admin := tn.users[tenancy.RoleAdmin].ID
	if r := e.do("POST", "/embed-sessions", teacher, map[string]any{"flow": "student-exam", "actor": admin,
		"assignmentId": asg}).must(t, http.StatusBadRequest); r.field() != "actor" {
		t.Fatalf("an admin as the student: %s", r.raw)
	}
	unassigned := str(e.do("POST", "/users", tn.keys[tenancy.RoleAdmin], map[string]any{"email": "new@x.test", "name": "New",
		"role": "student"}).must(t, http.StatusOK).body, "id")
	if r := e.do("POST", "/embed-sessions", teacher, map[string]any{"flow": "student-exam", "actor": unassigned,
		"assignmentId": asg}).must(t, http.StatusBadRequest); r.field() != "assignmentId" {
		t.Fatalf("an assignment not given to the actor: %s", r.raw)
	}
	another := str(e.do("POST", "/exams", teacher, map[string]any{"name": "Other", "language": "en"}).must(t, http.StatusOK).body, "id")
	if r := e.do("POST", "/embed-sessions", teacher, map[string]any{"flow": "student-exam", "actor": student, "examId": another,
		"assignmentId": asg}).must(t, http.StatusBadRequest); r.field() != "examId" {
		t.Fatalf("another exam than the assignment's: %s", r.raw)
	}
}

// embedSession creates, with key, the embed session body describes and
// returns its id.
func (e *env) embedSession(key string, body map[string]any) string {
	e.t.Helper()
	return str(e.do("POST", "/embed-sessions", key, body).must(e.t, http.StatusOK).body, "id")
}

// TestEmbedFormsAnswerWhatRefusedThem: the generate form shows a refusal
// with its own status. A teacher made a student while the session is open
// may no longer create exams: 403, not the 400 of a form to fix.
func TestEmbedFormsAnswerWhatRefusedThem(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	actor := tn.users[tenancy.RoleTeacher].ID
	generating := e.embedSession(tn.keys[tenancy.RoleTeacher], map[string]any{"flow": "generate-exam", "actor": actor})
	form := url.Values{"subject": {"Maths"}, "studentLevel": {"7"}, "durationMinutes": {"30"}, "questionTypes": {"true_false"}}
	if p := e.newBrowser().post(e.srv.URL+"/embed/"+generating+"/generate", url.Values{"subject": {""}}); p.status != http.StatusBadRequest {
		t.Fatalf("a form without a subject: %d", p.status)
	}
	e.do("PATCH", "/users/"+actor, tn.keys[tenancy.RoleOwner], `{"role":"student"}`).must(t, http.StatusOK)
	if p := e.newBrowser().post(e.srv.URL+"/embed/"+generating+"/generate", form); p.status != http.StatusForbidden {
		t.Fatalf("the form after its actor became a student: %d\n%s", p.status, p.body)
	}
}
