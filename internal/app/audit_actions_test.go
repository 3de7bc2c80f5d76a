package app_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/assessd/assessd/internal/identity"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// TestSignificantActionsAreAudited performs each action of spec 6.1 that
// the platform audits beyond plain create/update/delete, over HTTP or the
// pages, and finds its entry with the right actor and target.
func TestSignificantActionsAreAudited(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	teacherKey := tn.keys[tenancy.RoleTeacher]
	teacherID := tn.users[tenancy.RoleTeacher].ID
	studentID := tn.users[tenancy.RoleStudent].ID

	// A result scored by rules at once: submitted by the teacher, graded by
	// the platform's grading.
	exam := str(e.do("POST", "/exams", teacherKey, map[string]any{"name": "Audit", "language": "en"}).must(t, 200).body, "id")
	mc := str(e.do("POST", "/exams/"+exam+"/questions", teacherKey, map[string]any{"type": "true_false", "prompt": "The earth orbits the sun.",
		"config": map[string]any{"correct": true}}).must(t, 200).body, "id")
	res := str(e.do("POST", "/exams/"+exam+"/results", teacherKey, map[string]any{"userId": studentID,
		"answers": []any{map[string]any{"questionId": mc, "value": true}}}).must(t, 200).body, "id")
	e.auditEntry(tn, "result.submitted", teacherID, "result", res)
	if got := e.auditEntry(tn, "result.graded", "grading", "result", res); got["actor"].(map[string]any)["kind"] != "system" {
		t.Fatalf("graded entry actor: %v", got["actor"])
	}

	// A result graded later (an essay): the grading activity's domain call
	// finishes it.
	essay := str(e.do("POST", "/exams/"+exam+"/questions", teacherKey, map[string]any{"type": "essay", "prompt": "Explain photosynthesis in your own words.",
		"points": 5, "config": map[string]any{"rubric": "light"}}).must(t, 200).body, "id")
	pending := str(e.do("POST", "/exams/"+exam+"/results", teacherKey, map[string]any{"userId": studentID,
		"answers": []any{map[string]any{"questionId": mc, "value": true}, map[string]any{"questionId": essay, "value": "Plants use light."}}}).must(t, 200).body, "id")
	orgCtx := store.WithOrg(context.Background(), tn.org.ID)
	if err := e.app.Assessment.RecordGrade(orgCtx, pending, essay, 4, "Good", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.app.Assessment.FinishResult(orgCtx, pending, nil); err != nil {
		t.Fatal(err)
	}
	e.auditEntry(tn, "result.graded", "grading", "result", pending)

	// Question type deprecated and made private.
	admin := tn.keys[tenancy.RoleAdmin]
	qt := str(e.do("POST", "/question-types", admin, map[string]any{"key": "audited_type", "name": "Audited", "public": true,
		"responseProcessing": map[string]any{"condition": "=answer.value = true"}}).must(t, 200).body, "id")
	e.do("PATCH", "/question-types/"+qt, admin, map[string]any{"deprecated": true}).must(t, 200)
	e.auditEntry(tn, "question_type.deprecated", tn.users[tenancy.RoleAdmin].ID, "question_type", qt)
	e.do("PATCH", "/question-types/"+qt, admin, map[string]any{"public": false}).must(t, 200)
	e.auditEntry(tn, "question_type.made_private", tn.users[tenancy.RoleAdmin].ID, "question_type", qt)

	// An embed session.
	e.do("POST", "/embed-sessions", teacherKey, map[string]any{"flow": "student-exam", "actor": studentID, "examId": exam}).must(t, 200)
	e.auditEntry(tn, "embed_session.created", teacherID, "user", studentID)

	// Sign-ins: a wrong password, then the right one.
	a := e.newOAuthApp(tn, tenancy.RoleOwner, identity.ClientInput{Name: "Audited App"})
	b := e.newBrowser()
	login := b.get(e.srv.URL + "/login")
	if p := b.post(e.srv.URL+"/login", url.Values{"csrf": {login.field("csrf")}, "email": {a.email}, "password": {"wrong"}}); p.status != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d", p.status)
	}
	e.auditEntry(tn, "user.sign_in_failed", "login", "user", a.user.ID)
	csrf := e.signIn(b, a).field("csrf")
	e.auditEntry(tn, "user.signed_in", a.user.ID, "user", a.user.ID)

	// An API key revoked on the account page.
	created := b.post(e.srv.URL+"/account/api-keys", url.Values{"csrf": {csrf}, "name": {"audited"}})
	keyID := regexp.MustCompile(`/account/api-keys/(key_[0-9A-Z]+)/revoke`).FindStringSubmatch(created.body)
	if keyID == nil {
		t.Fatal("no revoke button for the key")
	}
	b.post(e.srv.URL+"/account/api-keys/"+keyID[1]+"/revoke", url.Values{"csrf": {csrf}})
	e.auditEntry(tn, "api_key.revoked", a.user.ID, "api_key", keyID[1])

	// Consent, then the app's access revoked by the user on the account page.
	a.conf.Scopes = []string{"profile"}
	e.token(a)
	consent := e.auditEntry(tn, "oauth_consent.granted", a.user.ID, "oauth_client", a.client.ID)
	if consent["actor"].(map[string]any)["clientId"] != a.client.ID {
		t.Fatalf("consent entry actor: %v", consent["actor"])
	}
	b.post(e.srv.URL+"/account/apps/"+a.client.ID+"/revoke", url.Values{"csrf": {csrf}})
	byUser := e.auditEntry(tn, "oauth_grant.revoked", a.user.ID, "oauth_client", a.client.ID)
	if byUser["reason"] != "revoked by the user on the account page" {
		t.Fatalf("revocation by the user: %v", byUser)
	}

	// The app revokes a token itself (RFC 7009).
	tok := e.token(a)
	res2, err := http.PostForm(e.srv.URL+"/oauth/revoke", url.Values{"token": {tok.AccessToken},
		"client_id": {a.conf.ClientID}, "client_secret": {a.conf.ClientSecret}})
	if err != nil || res2.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %v %v", err, res2)
	}
	res2.Body.Close()
	byApp := e.auditEntry(tn, "oauth_grant.revoked", a.user.ID, "oauth_client", a.client.ID)
	if byApp["reason"] != "revoked by the app (POST /oauth/revoke)" || byApp["actor"].(map[string]any)["clientId"] != a.client.ID {
		t.Fatalf("revocation by the app: %v", byApp)
	}
}
