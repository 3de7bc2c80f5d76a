package app_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

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
