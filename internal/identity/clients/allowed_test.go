package clients_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

func TestMain(m *testing.M) { apptest.Main(m) }

// TestOrgAllowedClients checks that a school (not the vendor that
// registered a client) can allow the vendor's app audit-logs:write for its
// own users over HTTP, and withdraw it.
func TestOrgAllowedClients(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	vendor := e.NewTenant("US", "pro")
	school := e.NewTenant("FR", "pro")
	other := e.NewTenant("DE", "pro")
	app := e.NewOAuthApp(vendor, tenancy.RoleTeacher, clients.ClientInput{Name: "Multi School Sync"})
	// A teacher of the school signs in to the vendor's app.
	teacher := e.NewOAuthApp(school, tenancy.RoleTeacher, clients.ClientInput{})
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
	if allowed.Body["clientId"] != app.Client.ID || allowed.Body["name"] != "Multi School Sync" || apptest.JSON(allowed.Body["scopes"]) != `["audit-logs:write"]` {
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
	e.AuditEntry(school, "org.client_allowed", school.Users[tenancy.RoleOwner].ID, "oauth_client", app.Client.ID)

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
	e.AuditEntry(school, "org.client_disallowed", school.Users[tenancy.RoleOwner].ID, "oauth_client", app.Client.ID)
}
