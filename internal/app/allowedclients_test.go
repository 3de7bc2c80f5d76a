package app_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/identity"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

// auditEntry finds the newest entry with action in tn's audit log and
// checks its actor and target.
func auditEntry(e *env, tn tenant, action, actorID, targetType, targetID string) map[string]any {
	e.T.Helper()
	r := e.Do("GET", "/audit-logs?action="+url.QueryEscape(action)+"&targetId="+url.QueryEscape(targetID), tn.Keys[tenancy.RoleOwner], nil).Must(e.T, http.StatusOK)
	list, _ := r.Body["auditLogs"].([]any)
	if len(list) == 0 {
		e.T.Fatalf("no %s entry for %s %s: %s", action, targetType, targetID, r.Raw)
	}
	entry := list[0].(map[string]any)
	actor := entry["actor"].(map[string]any)
	target := entry["target"].(map[string]any)
	if actor["id"] != actorID || target["type"] != targetType || target["id"] != targetID {
		e.T.Fatalf("%s entry: actor %v, target %v; want actor %s, target %s %s", action, actor, target, actorID, targetType, targetID)
	}
	return entry
}

// TestOrgAllowedClients checks that a school (not the vendor that
// registered a client) can allow the vendor's app audit-logs:write for its
// own users over HTTP, and withdraw it.
func TestOrgAllowedClients(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	vendor := e.NewTenant("US", "pro")
	school := e.NewTenant("FR", "pro")
	other := e.NewTenant("DE", "pro")
	app := e.NewOAuthApp(vendor, tenancy.RoleTeacher, identity.ClientInput{Name: "Multi School Sync"})
	// A teacher of the school signs in to the vendor's app.
	teacher := e.NewOAuthApp(school, tenancy.RoleTeacher, identity.ClientInput{})
	teacher.Conf = app.Conf
	teacher.Client = app.Client
	teacher.Conf.Scopes = []string{"profile", "audit-logs:write"}
	entry := `{"action":"grade.synced","target":{"type":"exam","id":"exm_42"}}`

	if tok := e.Token(teacher); strings.Contains(tok.Extra("scope").(string), "audit-logs:write") {
		t.Fatalf("granted audit-logs:write before the school allowed the app: %v", tok.Extra("scope"))
	}

	owner := school.Keys[tenancy.RoleOwner]
	body := `{"clientId":"` + app.Client.ID + `","scopes":["audit-logs:write"]}`
	e.Do("POST", "/org/allowed-clients", school.Keys[tenancy.RoleTeacher], body).Must(t, http.StatusForbidden)
	if r := e.Do("POST", "/org/allowed-clients", owner, `{"clientId":"`+app.Client.ID+`","scopes":["users:read"]}`).Must(t, http.StatusBadRequest); r.Field() != "scopes" {
		t.Fatalf("a scope that needs no allowing: %s", r.Raw)
	}
	if r := e.Do("POST", "/org/allowed-clients", owner, `{"clientId":"cli_01ARZ3NDEKTSV4RRFFQ69G5FAV","scopes":["audit-logs:write"]}`).Must(t, http.StatusBadRequest); r.Field() != "clientId" {
		t.Fatalf("unknown client: %s", r.Raw)
	}
	allowed := e.Do("POST", "/org/allowed-clients", owner, body).Must(t, http.StatusOK)
	if allowed.Body["clientId"] != app.Client.ID || allowed.Body["name"] != "Multi School Sync" || toJSON(allowed.Body["scopes"]) != `["audit-logs:write"]` {
		t.Fatalf("allowed client = %s", allowed.Raw)
	}
	e.Do("POST", "/org/allowed-clients", owner, body).Must(t, http.StatusOK) // again: harmless
	listed := e.Do("GET", "/org/allowed-clients", school.Keys[tenancy.RoleAdmin], nil).Must(t, http.StatusOK)
	if list := listed.Body["allowedClients"].([]any); len(list) != 1 || list[0].(map[string]any)["clientId"] != app.Client.ID {
		t.Fatalf("school's allowed clients = %s", listed.Raw)
	}
	if r := e.Do("GET", "/org/allowed-clients", other.Keys[tenancy.RoleOwner], nil).Must(t, http.StatusOK); len(r.Body["allowedClients"].([]any)) != 0 {
		t.Fatalf("another organization sees the school's allowance: %s", r.Raw)
	}
	auditEntry(e, school, "org.client_allowed", school.Users[tenancy.RoleOwner].ID, "oauth_client", app.Client.ID)

	// Now the school's teacher's token carries the scope, and writes.
	tok := e.Token(teacher)
	if !strings.Contains(tok.Extra("scope").(string), "audit-logs:write") {
		t.Fatalf("allowed app not granted audit-logs:write: %v", tok.Extra("scope"))
	}
	e.Do("POST", "/audit-logs", tok.AccessToken, entry).Must(t, http.StatusOK)
	// The vendor's own users still do not get it: only the school allowed it.
	app.Conf.Scopes = []string{"profile", "audit-logs:write"}
	if vt := e.Token(app); strings.Contains(vt.Extra("scope").(string), "audit-logs:write") {
		t.Fatalf("the vendor's user got audit-logs:write from the school's allowance: %v", vt.Extra("scope"))
	}

	// Removing the allowance takes the scope from live tokens at once.
	e.Do("DELETE", "/org/allowed-clients/"+app.Client.ID, other.Keys[tenancy.RoleOwner], nil).Must(t, http.StatusNotFound)
	e.Do("DELETE", "/org/allowed-clients/"+app.Client.ID, owner, nil).Must(t, http.StatusOK)
	e.Do("DELETE", "/org/allowed-clients/"+app.Client.ID, owner, nil).Must(t, http.StatusNotFound)
	e.Do("POST", "/audit-logs", tok.AccessToken, entry).Must(t, http.StatusForbidden)
	auditEntry(e, school, "org.client_disallowed", school.Users[tenancy.RoleOwner].ID, "oauth_client", app.Client.ID)
}

// TestAccountPageAllowedApps allows and removes an app from the account
// page, as an owner; a teacher does not see the section.
func TestAccountPageAllowedApps(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	vendor := e.NewTenant("US", "pro")
	school := e.NewTenant("FR", "pro")
	app := e.NewOAuthApp(vendor, tenancy.RoleTeacher, identity.ClientInput{Name: "Multi School Sync"})
	owner := e.NewOAuthApp(school, tenancy.RoleOwner, identity.ClientInput{})

	b := e.NewBrowser()
	csrf := e.SignIn(b, owner).Field("csrf")
	if p := b.Post(e.Srv.URL+"/account/allowed-apps", url.Values{"csrf": {csrf}, "clientId": {"cli_unknown"}}); p.Status != http.StatusBadRequest || !strings.Contains(p.Body, "not a registered OAuth client") {
		t.Fatalf("unknown client on the page: %d", p.Status)
	}
	p := b.Post(e.Srv.URL+"/account/allowed-apps", url.Values{"csrf": {csrf}, "clientId": {app.Client.ID}})
	if p.Status != http.StatusOK || !strings.Contains(p.Body, "Multi School Sync") || !strings.Contains(p.Body, "/account/allowed-apps/"+app.Client.ID+"/remove") {
		t.Fatalf("allowed app not listed: %d\n%s", p.Status, p.Body)
	}
	listed := e.Do("GET", "/org/allowed-clients", school.Keys[tenancy.RoleOwner], nil).Must(t, http.StatusOK)
	if len(listed.Body["allowedClients"].([]any)) != 1 {
		t.Fatalf("the page's allowance is not in the API: %s", listed.Raw)
	}
	p = b.Post(e.Srv.URL+"/account/allowed-apps/"+app.Client.ID+"/remove", url.Values{"csrf": {csrf}})
	if p.Status != http.StatusOK || strings.Contains(p.Body, "/account/allowed-apps/"+app.Client.ID+"/remove") {
		t.Fatalf("removed app still listed: %d", p.Status)
	}

	teacher := e.NewOAuthApp(school, tenancy.RoleTeacher, identity.ClientInput{})
	tb := e.NewBrowser()
	if page := e.SignIn(tb, teacher); strings.Contains(page.Body, "allowed-apps") {
		t.Fatal("a teacher sees the allowed apps section")
	}
	if p := tb.Post(e.Srv.URL+"/account/allowed-apps", url.Values{"csrf": {tb.Get(e.Srv.URL + "/account").Field("csrf")}, "clientId": {app.Client.ID}}); p.Status == http.StatusSeeOther || p.Status == http.StatusOK && strings.Contains(p.Body, "app-allowed") {
		t.Fatalf("a teacher allowed an app: %d", p.Status)
	}
}
