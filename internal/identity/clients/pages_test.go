package clients_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

func TestDeveloperArea(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	admin := e.NewOAuthApp(tn, tenancy.RoleAdmin, clients.ClientInput{})
	b := e.NewBrowser()
	csrf := e.SignIn(b, admin).Field("csrf")

	created := b.Post(e.Srv.URL+"/developer/clients", url.Values{"csrf": {csrf}, "name": {"Roster Sync"},
		"description": {"Keeps rosters in sync"}, "redirectUris": {"https://roster.example/cb\nhttp://localhost:8000/cb"}})
	codes := created.Codes()
	if len(codes) < 2 || !strings.HasPrefix(codes[0], "cli_") || !strings.HasPrefix(codes[1], "cs_") {
		t.Fatalf("client ID and secret not shown on save:\n%s", created.Body)
	}
	clientID, secret := codes[0], codes[1]
	list := b.Get(e.Srv.URL + "/developer")
	if !strings.Contains(list.Body, "Roster Sync") || strings.Contains(list.Body, secret) {
		t.Fatal("the list lacks the client or shows its secret again")
	}
	bad := b.Post(e.Srv.URL+"/developer/clients", url.Values{"csrf": {csrf}, "name": {"X"}, "redirectUris": {"http://evil.example/cb"}})
	if bad.Status != http.StatusBadRequest || !strings.Contains(bad.Body, "https") {
		t.Fatalf("invalid redirect URI: %d", bad.Status)
	}

	edited := b.Post(e.Srv.URL+"/developer/clients/"+clientID, url.Values{"csrf": {csrf}, "name": {"Roster Sync 2"},
		"redirectUris": {"https://roster.example/cb"}})
	if !strings.Contains(edited.Body, "Roster Sync 2") {
		t.Fatalf("edit: %d", edited.Status)
	}
	rotated := b.Post(e.Srv.URL+"/developer/clients/"+clientID+"/rotate", url.Values{"csrf": {csrf}})
	m := regexp.MustCompile(`<code>(cs_[^<]+)</code>`).FindStringSubmatch(rotated.Body)
	if m == nil || m[1] == secret {
		t.Fatal("rotation did not show a new secret")
	}
	if got := clientAuthStatus(e, clientID, secret); got == http.StatusOK {
		t.Fatal("the old secret still authenticates after rotation")
	}
	if got := clientAuthStatus(e, clientID, m[1]); got != http.StatusOK {
		t.Fatalf("the new secret does not authenticate: %d", got)
	}
	b.Post(e.Srv.URL+"/developer/clients/"+clientID+"/delete", url.Values{"csrf": {csrf}})
	if strings.Contains(b.Get(e.Srv.URL+"/developer").Body, clientID) {
		t.Fatal("deleted client still listed")
	}

	teacher := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{})
	tb := e.NewBrowser()
	e.SignIn(tb, teacher)
	if p := tb.Get(e.Srv.URL + "/developer"); p.Status != http.StatusForbidden {
		t.Fatalf("teacher in the developer area: %d", p.Status)
	}
}

// TestPagesShowTheBounds: past MaxClients the developer page refuses a
// client with the bound's message and the API's 409, and registers
// nothing; past MaxActiveKeys the account page refuses a key the same way.
func TestPagesShowTheBounds(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	admin := e.NewOAuthApp(tn, tenancy.RoleAdmin, clients.ClientInput{})
	sys := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.Org.ID))
	for range clients.MaxClients - 1 { // newOAuthApp registered one
		if _, _, err := e.App.Clients.CreateClient(sys, clients.ClientInput{Name: "Filler", RedirectURIs: []string{apptest.TestRedirect}}); err != nil {
			t.Fatal(err)
		}
	}
	for range tenancy.MaxActiveKeys {
		if _, _, err := e.App.Tenancy.CreateAPIKey(sys, admin.User.ID, "filler"); err != nil {
			t.Fatal(err)
		}
	}
	b := e.NewBrowser()
	csrf := e.SignIn(b, admin).Field("csrf")
	client := b.Post(e.Srv.URL+"/developer/clients", url.Values{"csrf": {csrf}, "name": {"One Too Many"}, "redirectUris": {"https://app.example/cb"}})
	if client.Status != http.StatusConflict || !strings.Contains(client.Body, "at most 50 OAuth clients") {
		t.Fatalf("client %d: %d\n%s", clients.MaxClients+1, client.Status, client.Body)
	}
	if list := b.Get(e.Srv.URL + "/developer"); strings.Contains(list.Body, "One Too Many") {
		t.Fatal("the refused client was registered")
	}
	key := b.Post(e.Srv.URL+"/account/api-keys", url.Values{"csrf": {csrf}, "name": {"one too many"}})
	if key.Status != http.StatusConflict || !strings.Contains(key.Body, "at most 20 active API keys") || strings.Contains(key.Body, "<code>ak_") {
		t.Fatalf("key %d: %d\n%s", tenancy.MaxActiveKeys+1, key.Status, key.Body)
	}
}

// clientAuthStatus is the introspection endpoint's status for a client's
// credentials: 200 when they authenticate.
func clientAuthStatus(e *apptest.Env, clientID, secret string) int {
	e.T.Helper()
	req, _ := http.NewRequest("POST", e.Srv.URL+"/oauth/introspect", strings.NewReader("token=none"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(clientID, secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}
