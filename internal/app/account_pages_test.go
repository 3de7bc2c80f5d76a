package app_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/identity"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

var codeTag = regexp.MustCompile(`<code>([^<]+)</code>`)

func TestAccountPage(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	a := e.NewOAuthApp(tn, tenancy.RoleTeacher, identity.ClientInput{Name: "Gradebook"})
	b := e.NewBrowser()
	account := e.SignIn(b, a)
	csrf := account.Field("csrf")

	// Profile name.
	if p := b.Post(e.Srv.URL+"/account/profile", url.Values{"csrf": {csrf}, "name": {"Renamed Teacher"}}); !strings.Contains(p.Body, `value="Renamed Teacher"`) {
		t.Fatalf("profile update: %d", p.Status)
	}
	// API key: shown once, works, revocable.
	created := b.Post(e.Srv.URL+"/account/api-keys", url.Values{"csrf": {csrf}, "name": {"export"}})
	m := codeTag.FindStringSubmatch(created.Body)
	if m == nil || !strings.HasPrefix(m[1], "ak_") {
		t.Fatalf("new key not shown:\n%s", created.Body)
	}
	key := m[1]
	e.Do("GET", "/me", key, nil).Must(t, http.StatusOK)
	if strings.Contains(b.Get(e.Srv.URL+"/account").Body, key) {
		t.Fatal("the API key is shown again after creation")
	}
	keyID := regexp.MustCompile(`/account/api-keys/(key_[0-9A-Z]+)/revoke`).FindStringSubmatch(b.Get(e.Srv.URL + "/account").Body)
	if keyID == nil {
		t.Fatal("no revoke button for the key")
	}
	b.Post(e.Srv.URL+"/account/api-keys/"+keyID[1]+"/revoke", url.Values{"csrf": {csrf}})
	e.Do("GET", "/me", key, nil).Must(t, http.StatusUnauthorized)

	// Connected apps: listed with scopes, revocable at once.
	a.Conf.Scopes = []string{"profile", "users:read"}
	tok := e.Token(a)
	e.Do("GET", "/users", tok.AccessToken, nil).Must(t, http.StatusOK)
	page := b.Get(e.Srv.URL + "/account")
	if !strings.Contains(page.Body, "Gradebook") || !strings.Contains(page.Body, "users:read") {
		t.Fatalf("connected app not listed:\n%s", page.Body)
	}
	b.Post(e.Srv.URL+"/account/apps/"+a.Client.ID+"/revoke", url.Values{"csrf": {csrf}})
	e.Do("GET", "/users", tok.AccessToken, nil).Must(t, http.StatusUnauthorized)

	// Forms without the session's CSRF token are refused.
	if p := b.Post(e.Srv.URL+"/account/api-keys", url.Values{"name": {"x"}}); p.Status != http.StatusForbidden {
		t.Fatalf("key creation without CSRF: %d", p.Status)
	}
	// Signed out, the account redirects to the login page.
	if p := e.NewBrowser().Get(e.Srv.URL + "/account"); !strings.Contains(p.Body, `name="password"`) {
		t.Fatal("account page reachable without signing in")
	}
}

func TestDeveloperArea(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	admin := e.NewOAuthApp(tn, tenancy.RoleAdmin, identity.ClientInput{})
	b := e.NewBrowser()
	csrf := e.SignIn(b, admin).Field("csrf")

	created := b.Post(e.Srv.URL+"/developer/clients", url.Values{"csrf": {csrf}, "name": {"Roster Sync"},
		"description": {"Keeps rosters in sync"}, "redirectUris": {"https://roster.example/cb\nhttp://localhost:8000/cb"}})
	codes := codeTag.FindAllStringSubmatch(created.Body, -1)
	if len(codes) < 2 || !strings.HasPrefix(codes[0][1], "cli_") || !strings.HasPrefix(codes[1][1], "cs_") {
		t.Fatalf("client ID and secret not shown on save:\n%s", created.Body)
	}
	clientID, secret := codes[0][1], codes[1][1]
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

	teacher := e.NewOAuthApp(tn, tenancy.RoleTeacher, identity.ClientInput{})
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
	admin := e.NewOAuthApp(tn, tenancy.RoleAdmin, identity.ClientInput{})
	sys := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.Org.ID))
	for range identity.MaxClients - 1 { // newOAuthApp registered one
		if _, _, err := e.App.Identity.CreateClient(sys, identity.ClientInput{Name: "Filler", RedirectURIs: []string{apptest.TestRedirect}}); err != nil {
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
		t.Fatalf("client %d: %d\n%s", identity.MaxClients+1, client.Status, client.Body)
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
func clientAuthStatus(e *env, clientID, secret string) int {
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

// TestDeveloperAreaWebhooks manages a webhook endpoint in the developer
// area: the secret is shown once, internal targets are refused, edits and
// rotation work, and teachers are kept out.
func TestDeveloperAreaWebhooks(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	admin := e.NewOAuthApp(tn, tenancy.RoleAdmin, identity.ClientInput{})
	b := e.NewBrowser()
	csrf := e.SignIn(b, admin).Field("csrf")

	bad := b.Post(e.Srv.URL+"/developer/webhooks", url.Values{"csrf": {csrf}, "url": {"https://169.254.169.254/latest"}, "events": {"user.created"}})
	if bad.Status != http.StatusBadRequest || !strings.Contains(bad.Body, "metadata address") {
		t.Fatalf("metadata target: %d", bad.Status)
	}
	created := b.Post(e.Srv.URL+"/developer/webhooks", url.Values{"csrf": {csrf}, "url": {"https://93.184.215.14/hooks"},
		"description": {"Gradebook"}, "events": {"result.graded", "user.created"}})
	codes := codeTag.FindAllStringSubmatch(created.Body, -1)
	if len(codes) < 2 || !strings.HasPrefix(codes[0][1], "whe_") || !strings.HasPrefix(codes[1][1], "whsec_") {
		t.Fatalf("endpoint ID and secret not shown on save:\n%s", created.Body)
	}
	id, secret := codes[0][1], codes[1][1]
	if list := b.Get(e.Srv.URL + "/developer/webhooks"); !strings.Contains(list.Body, "Gradebook") || strings.Contains(list.Body, secret) {
		t.Fatal("the list lacks the endpoint or shows its secret again")
	}
	edited := b.Post(e.Srv.URL+"/developer/webhooks/"+id, url.Values{"csrf": {csrf}, "url": {"https://93.184.215.14/hooks"},
		"description": {"Gradebook 2"}, "events": {"user.deleted"}})
	if !strings.Contains(edited.Body, "Gradebook 2") || !strings.Contains(edited.Body, `value="user.deleted" checked`) {
		t.Fatalf("edit: %d", edited.Status)
	}
	rotated := b.Post(e.Srv.URL+"/developer/webhooks/"+id+"/rotate", url.Values{"csrf": {csrf}})
	if m := regexp.MustCompile(`<code>(whsec_[^<]+)</code>`).FindStringSubmatch(rotated.Body); m == nil || m[1] == secret {
		t.Fatal("rotation did not show a new secret")
	}
	b.Post(e.Srv.URL+"/developer/webhooks/"+id+"/delete", url.Values{"csrf": {csrf}})
	if strings.Contains(b.Get(e.Srv.URL+"/developer/webhooks").Body, id) {
		t.Fatal("deleted endpoint still listed")
	}

	teacher := e.NewOAuthApp(tn, tenancy.RoleTeacher, identity.ClientInput{})
	tb := e.NewBrowser()
	e.SignIn(tb, teacher)
	if p := tb.Get(e.Srv.URL + "/developer/webhooks"); p.Status != http.StatusForbidden {
		t.Fatalf("teacher in the webhooks pages: %d", p.Status)
	}
}

// TestPagesRefuseTextTheDatabaseCannotHold sends a NUL, which PostgreSQL
// cannot store, and invalid UTF-8 through every kind of input the pages
// take: a 400 that says what is wrong, not "try again later".
func TestPagesRefuseTextTheDatabaseCannotHold(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	a := e.NewOAuthApp(tn, tenancy.RoleOwner, identity.ClientInput{Name: "Gradebook"})
	b := e.NewBrowser()
	csrf := e.SignIn(b, a).Field("csrf")
	refused := func(what string, p page) {
		t.Helper()
		if p.Status != http.StatusBadRequest || !strings.Contains(p.Body, "Request refused") {
			t.Errorf("%s: %d\n%s", what, p.Status, p.Body)
		}
	}
	for _, bad := range []string{"a\x00b", "\xff"} {
		refused("profile name", b.Post(e.Srv.URL+"/account/profile", url.Values{"csrf": {csrf}, "name": {bad}}))
		refused("key name", b.Post(e.Srv.URL+"/account/api-keys", url.Values{"csrf": {csrf}, "name": {bad}}))
		refused("allowed app", b.Post(e.Srv.URL+"/account/allowed-apps", url.Values{"csrf": {csrf}, "clientId": {bad}}))
		refused("client", b.Post(e.Srv.URL+"/developer/clients", url.Values{"csrf": {csrf}, "name": {bad}, "redirectUris": {"https://app.example/cb"}}))
		refused("field name", b.Post(e.Srv.URL+"/developer/clients", url.Values{"csrf": {csrf}, bad: {"x"}}))
		refused("path", b.Post(e.Srv.URL+"/account/apps/"+url.PathEscape(bad)+"/revoke", url.Values{"csrf": {csrf}}))
		refused("query", b.Get(e.Srv.URL+"/login?authRequestID="+url.QueryEscape(bad)))
		login := e.NewBrowser()
		refused("login", login.Post(e.Srv.URL+"/login", url.Values{"csrf": {login.Get(e.Srv.URL + "/login").Field("csrf")}, "email": {a.Email + bad}, "password": {"x"}}))
	}
	// The page still works for text that keeps the rule.
	if p := b.Post(e.Srv.URL+"/account/profile", url.Values{"csrf": {csrf}, "name": {"Zoë"}}); !strings.Contains(p.Body, `value="Zoë"`) {
		t.Fatalf("profile update after the refusals: %d", p.Status)
	}
}
