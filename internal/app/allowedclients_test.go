package app_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/identity"
	"github.com/assessd/assessd/tenancy"
)

// auditEntry finds the newest entry with action in tn's audit log and
// checks its actor and target.
func (e *env) auditEntry(tn tenant, action, actorID, targetType, targetID string) map[string]any {
	e.t.Helper()
	r := e.do("GET", "/audit-logs?action="+url.QueryEscape(action)+"&targetId="+url.QueryEscape(targetID), tn.keys[tenancy.RoleOwner], nil).must(e.t, http.StatusOK)
	list, _ := r.body["auditLogs"].([]any)
	if len(list) == 0 {
		e.t.Fatalf("no %s entry for %s %s: %s", action, targetType, targetID, r.raw)
	}
	entry := list[0].(map[string]any)
	actor := entry["actor"].(map[string]any)
	target := entry["target"].(map[string]any)
	if actor["id"] != actorID || target["type"] != targetType || target["id"] != targetID {
		e.t.Fatalf("%s entry: actor %v, target %v; want actor %s, target %s %s", action, actor, target, actorID, targetType, targetID)
	}
	return entry
}

// TestOrgAllowedClients checks that a school (not the vendor that
// registered a client) can allow the vendor's app audit-logs:write for its
// own users over HTTP, and withdraw it.
func TestOrgAllowedClients(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	vendor := e.newTenant("US", "pro")
	school := e.newTenant("FR", "pro")
	other := e.newTenant("DE", "pro")
	app := e.newOAuthApp(vendor, tenancy.RoleTeacher, identity.ClientInput{Name: "Multi School Sync"})
	// A teacher of the school signs in to the vendor's app.
	teacher := e.newOAuthApp(school, tenancy.RoleTeacher, identity.ClientInput{})
	teacher.conf = app.conf
	teacher.client = app.client
	teacher.conf.Scopes = []string{"profile", "audit-logs:write"}
	entry := `{"action":"grade.synced","target":{"type":"exam","id":"exm_42"}}`

	if tok := e.token(teacher); strings.Contains(tok.Extra("scope").(string), "audit-logs:write") {
		t.Fatalf("granted audit-logs:write before the school allowed the app: %v", tok.Extra("scope"))
	}

	owner := school.keys[tenancy.RoleOwner]
	body := `{"clientId":"` + app.client.ID + `","scopes":["audit-logs:write"]}`
	e.do("POST", "/org/allowed-clients", school.keys[tenancy.RoleTeacher], body).must(t, http.StatusForbidden)
	if r := e.do("POST", "/org/allowed-clients", owner, `{"clientId":"`+app.client.ID+`","scopes":["users:read"]}`).must(t, http.StatusBadRequest); r.field() != "scopes" {
		t.Fatalf("a scope that needs no allowing: %s", r.raw)
	}
	if r := e.do("POST", "/org/allowed-clients", owner, `{"clientId":"cli_01ARZ3NDEKTSV4RRFFQ69G5FAV","scopes":["audit-logs:write"]}`).must(t, http.StatusBadRequest); r.field() != "clientId" {
		t.Fatalf("unknown client: %s", r.raw)
	}
	allowed := e.do("POST", "/org/allowed-clients", owner, body).must(t, http.StatusOK)
	if allowed.body["clientId"] != app.client.ID || allowed.body["name"] != "Multi School Sync" || toJSON(allowed.body["scopes"]) != `["audit-logs:write"]` {
		t.Fatalf("allowed client = %s", allowed.raw)
	}
	e.do("POST", "/org/allowed-clients", owner, body).must(t, http.StatusOK) // again: harmless
	listed := e.do("GET", "/org/allowed-clients", school.keys[tenancy.RoleAdmin], nil).must(t, http.StatusOK)
	if list := listed.body["allowedClients"].([]any); len(list) != 1 || list[0].(map[string]any)["clientId"] != app.client.ID {
		t.Fatalf("school's allowed clients = %s", listed.raw)
	}
	if r := e.do("GET", "/org/allowed-clients", other.keys[tenancy.RoleOwner], nil).must(t, http.StatusOK); len(r.body["allowedClients"].([]any)) != 0 {
		t.Fatalf("another organization sees the school's allowance: %s", r.raw)
	}
	e.auditEntry(school, "org.client_allowed", school.users[tenancy.RoleOwner].ID, "oauth_client", app.client.ID)

	// Now the school's teacher's token carries the scope, and writes.
	tok := e.token(teacher)
	if !strings.Contains(tok.Extra("scope").(string), "audit-logs:write") {
		t.Fatalf("allowed app not granted audit-logs:write: %v", tok.Extra("scope"))
	}
	e.do("POST", "/audit-logs", tok.AccessToken, entry).must(t, http.StatusOK)
	// The vendor's own users still do not get it: only the school allowed it.
	app.conf.Scopes = []string{"profile", "audit-logs:write"}
	if vt := e.token(app); strings.Contains(vt.Extra("scope").(string), "audit-logs:write") {
		t.Fatalf("the vendor's user got audit-logs:write from the school's allowance: %v", vt.Extra("scope"))
	}

	// Removing the allowance takes the scope from live tokens at once.
	e.do("DELETE", "/org/allowed-clients/"+app.client.ID, other.keys[tenancy.RoleOwner], nil).must(t, http.StatusNotFound)
	e.do("DELETE", "/org/allowed-clients/"+app.client.ID, owner, nil).must(t, http.StatusOK)
	e.do("DELETE", "/org/allowed-clients/"+app.client.ID, owner, nil).must(t, http.StatusNotFound)
	e.do("POST", "/audit-logs", tok.AccessToken, entry).must(t, http.StatusForbidden)
	e.auditEntry(school, "org.client_disallowed", school.users[tenancy.RoleOwner].ID, "oauth_client", app.client.ID)
}

// TestAccountPageAllowedApps allows and removes an app from the account
// page, as an owner; a teacher does not see the section.
func TestAccountPageAllowedApps(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	vendor := e.newTenant("US", "pro")
	school := e.newTenant("FR", "pro")
	app := e.newOAuthApp(vendor, tenancy.RoleTeacher, identity.ClientInput{Name: "Multi School Sync"})
	owner := e.newOAuthApp(school, tenancy.RoleOwner, identity.ClientInput{})

	b := e.newBrowser()
	csrf := e.signIn(b, owner).field("csrf")
	if p := b.post(e.srv.URL+"/account/allowed-apps", url.Values{"csrf": {csrf}, "clientId": {"cli_unknown"}}); p.status != http.StatusBadRequest || !strings.Contains(p.body, "not a registered OAuth client") {
		t.Fatalf("unknown client on the page: %d", p.status)
	}
	p := b.post(e.srv.URL+"/account/allowed-apps", url.Values{"csrf": {csrf}, "clientId": {app.client.ID}})
	if p.status != http.StatusOK || !strings.Contains(p.body, "Multi School Sync") || !strings.Contains(p.body, "/account/allowed-apps/"+app.client.ID+"/remove") {
		t.Fatalf("allowed app not listed: %d\n%s", p.status, p.body)
	}
	listed := e.do("GET", "/org/allowed-clients", school.keys[tenancy.RoleOwner], nil).must(t, http.StatusOK)
	if len(listed.body["allowedClients"].([]any)) != 1 {
		t.Fatalf("the page's allowance is not in the API: %s", listed.raw)
	}
	p = b.post(e.srv.URL+"/account/allowed-apps/"+app.client.ID+"/remove", url.Values{"csrf": {csrf}})
	if p.status != http.StatusOK || strings.Contains(p.body, "/account/allowed-apps/"+app.client.ID+"/remove") {
		t.Fatalf("removed app still listed: %d", p.status)
	}

	teacher := e.newOAuthApp(school, tenancy.RoleTeacher, identity.ClientInput{})
	tb := e.newBrowser()
	if page := e.signIn(tb, teacher); strings.Contains(page.body, "allowed-apps") {
		t.Fatal("a teacher sees the allowed apps section")
	}
	if p := tb.post(e.srv.URL+"/account/allowed-apps", url.Values{"csrf": {tb.get(e.srv.URL + "/account").field("csrf")}, "clientId": {app.client.ID}}); p.status == http.StatusSeeOther || p.status == http.StatusOK && strings.Contains(p.body, "app-allowed") {
		t.Fatalf("a teacher allowed an app: %d", p.status)
	}
}
