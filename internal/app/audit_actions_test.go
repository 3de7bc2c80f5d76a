package app_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

// TestSignificantActionsAreAudited performs each action of spec 6.1 that
// the platform audits beyond plain create/update/delete, over HTTP or the
// pages, and finds its entry with the right actor and target.
func TestSignificantActionsAreAudited(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	teacherKey := tn.Keys[tenancy.RoleTeacher]
	teacherID := tn.Users[tenancy.RoleTeacher].ID
	studentID := tn.Users[tenancy.RoleStudent].ID

	// A result scored by rules at once: submitted by the teacher, graded by
	// the platform's grading.
	exam := apptest.Str(e.Do("POST", "/exams", teacherKey, map[string]any{"name": "Audit", "language": "en"}).Must(t, 200).Body, "id")
	mc := apptest.Str(e.Do("POST", "/exams/"+exam+"/questions", teacherKey, map[string]any{"type": "true_false", "prompt": "The earth orbits the sun.",
		"config": map[string]any{"correct": true}}).Must(t, 200).Body, "id")
	res := apptest.Str(e.Do("POST", "/exams/"+exam+"/results", teacherKey, map[string]any{"userId": studentID,
		"answers": []any{map[string]any{"questionId": mc, "value": true}}}).Must(t, 200).Body, "id")
	auditEntry(e, tn, "result.submitted", teacherID, "result", res)
	if got := auditEntry(e, tn, "result.graded", "grading", "result", res); got["actor"].(map[string]any)["kind"] != "system" {
		t.Fatalf("graded entry actor: %v", got["actor"])
	}

	// A result graded later (an essay): the grading activity's domain call
	// finishes it.
	essay := apptest.Str(e.Do("POST", "/exams/"+exam+"/questions", teacherKey, map[string]any{"type": "essay", "prompt": "Explain photosynthesis in your own words.",
		"points": 5, "config": map[string]any{"rubric": "light"}}).Must(t, 200).Body, "id")
	pending := apptest.Str(e.Do("POST", "/exams/"+exam+"/results", teacherKey, map[string]any{"userId": studentID,
		"answers": []any{map[string]any{"questionId": mc, "value": true}, map[string]any{"questionId": essay, "value": "Plants use light."}}}).Must(t, 200).Body, "id")
	orgCtx := store.WithOrg(context.Background(), tn.Org.ID)
	if err := e.App.Assessment.RecordGrade(orgCtx, pending, essay, 4, "Good", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.App.Assessment.FinishResult(orgCtx, pending, nil); err != nil {
		t.Fatal(err)
	}
	auditEntry(e, tn, "result.graded", "grading", "result", pending)

	// Question type deprecated and made private.
	admin := tn.Keys[tenancy.RoleAdmin]
	qt := apptest.Str(e.Do("POST", "/question-types", admin, map[string]any{"key": "audited_type", "name": "Audited", "public": true,
		"responseProcessing": map[string]any{"condition": "=answer.value = true"}}).Must(t, 200).Body, "id")
	e.Do("PATCH", "/question-types/"+qt, admin, map[string]any{"deprecated": true}).Must(t, 200)
	auditEntry(e, tn, "question_type.deprecated", tn.Users[tenancy.RoleAdmin].ID, "question_type", qt)
	e.Do("PATCH", "/question-types/"+qt, admin, map[string]any{"public": false}).Must(t, 200)
	auditEntry(e, tn, "question_type.made_private", tn.Users[tenancy.RoleAdmin].ID, "question_type", qt)

	// An embed session.
	e.Do("POST", "/embed-sessions", teacherKey, map[string]any{"flow": "student-exam", "actor": studentID, "examId": exam}).Must(t, 200)
	auditEntry(e, tn, "embed_session.created", teacherID, "user", studentID)

	// Sign-ins: a wrong password, then the right one.
	a := e.NewOAuthApp(tn, tenancy.RoleOwner, clients.ClientInput{Name: "Audited App"})
	b := e.NewBrowser()
	login := b.Get(e.Srv.URL + "/login")
	if p := b.Post(e.Srv.URL+"/login", url.Values{"csrf": {login.Field("csrf")}, "email": {a.Email}, "password": {"wrong"}}); p.Status != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d", p.Status)
	}
	auditEntry(e, tn, "user.sign_in_failed", "login", "user", a.User.ID)
	csrf := e.SignIn(b, a).Field("csrf")
	auditEntry(e, tn, "user.signed_in", a.User.ID, "user", a.User.ID)

	// An API key revoked on the account page.
	created := b.Post(e.Srv.URL+"/account/api-keys", url.Values{"csrf": {csrf}, "name": {"audited"}})
	keyID := regexp.MustCompile(`/account/api-keys/(key_[0-9A-Z]+)/revoke`).FindStringSubmatch(created.Body)
	if keyID == nil {
		t.Fatal("no revoke button for the key")
	}
	b.Post(e.Srv.URL+"/account/api-keys/"+keyID[1]+"/revoke", url.Values{"csrf": {csrf}})
	auditEntry(e, tn, "api_key.revoked", a.User.ID, "api_key", keyID[1])

	// Consent, then the app's access revoked by the user on the account page.
	a.Conf.Scopes = []string{"profile"}
	e.Token(a)
	consent := auditEntry(e, tn, "oauth_consent.granted", a.User.ID, "oauth_client", a.Client.ID)
	if consent["actor"].(map[string]any)["clientId"] != a.Client.ID {
		t.Fatalf("consent entry actor: %v", consent["actor"])
	}
	b.Post(e.Srv.URL+"/account/apps/"+a.Client.ID+"/revoke", url.Values{"csrf": {csrf}})
	byUser := auditEntry(e, tn, "oauth_grant.revoked", a.User.ID, "oauth_client", a.Client.ID)
	if byUser["reason"] != "revoked by the user on the account page" {
		t.Fatalf("revocation by the user: %v", byUser)
	}

	// The app revokes a token itself (RFC 7009).
	tok := e.Token(a)
	res2, err := http.PostForm(e.Srv.URL+"/oauth/revoke", url.Values{"token": {tok.AccessToken},
		"client_id": {a.Conf.ClientID}, "client_secret": {a.Conf.ClientSecret}})
	if err != nil || res2.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %v %v", err, res2)
	}
	res2.Body.Close()
	byApp := auditEntry(e, tn, "oauth_grant.revoked", a.User.ID, "oauth_client", a.Client.ID)
	if byApp["reason"] != "revoked by the app (POST /oauth/revoke)" || byApp["actor"].(map[string]any)["clientId"] != a.Client.ID {
		t.Fatalf("revocation by the app: %v", byApp)
	}
}
