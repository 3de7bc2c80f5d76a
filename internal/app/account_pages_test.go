package app_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/identity"
	"github.com/assessd/assessd/tenancy"
)

// signIn signs the browser in on the login page.
func (e *env) signIn(b *browser, a *oauthApp) page {
	e.t.Helper()
	login := b.get(e.srv.URL + "/login")
	p := b.post(e.srv.URL+"/login", url.Values{"csrf": {login.field("csrf")}, "email": {a.email}, "password": {a.password}})
	if p.status != http.StatusOK || !strings.Contains(p.body, "Account settings") {
		e.t.Fatalf("sign-in did not land on the account page: %d\n%s", p.status, p.body)
	}
	return p
}

var codeTag = regexp.MustCompile(`<code>([^<]+)</code>`)

func TestAccountPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	a := e.newOAuthApp(tn, tenancy.RoleTeacher, identity.ClientInput{Name: "Gradebook"})
	b := e.newBrowser()
	account := e.signIn(b, a)
	csrf := account.field("csrf")

	// Profile name.
	if p := b.post(e.srv.URL+"/account/profile", url.Values{"csrf": {csrf}, "name": {"Renamed Teacher"}}); !strings.Contains(p.body, `value="Renamed Teacher"`) {
		t.Fatalf("profile update: %d", p.status)
	}
	// API key: shown once, works, revocable.
	created := b.post(e.srv.URL+"/account/api-keys", url.Values{"csrf": {csrf}, "name": {"export"}})
	m := codeTag.FindStringSubmatch(created.body)
	if m == nil || !strings.HasPrefix(m[1], "ak_") {
		t.Fatalf("new key not shown:\n%s", created.body)
	}
	key := m[1]
	e.do("GET", "/me", key, nil).must(t, http.StatusOK)
	if strings.Contains(b.get(e.srv.URL+"/account").body, key) {
		t.Fatal("the API key is shown again after creation")
	}
	keyID := regexp.MustCompile(`/account/api-keys/(key_[0-9A-Z]+)/revoke`).FindStringSubmatch(b.get(e.srv.URL + "/account").body)
	if keyID == nil {
		t.Fatal("no revoke button for the key")
	}
	b.post(e.srv.URL+"/account/api-keys/"+keyID[1]+"/revoke", url.Values{"csrf": {csrf}})
	e.do("GET", "/me", key, nil).must(t, http.StatusUnauthorized)

	// Connected apps: listed with scopes, revocable at once.
	a.conf.Scopes = []string{"profile", "users:read"}
	tok := e.token(a)
	e.do("GET", "/users", tok.AccessToken, nil).must(t, http.StatusOK)
	page := b.get(e.srv.URL + "/account")
	if !strings.Contains(page.body, "Gradebook") || !strings.Contains(page.body, "users:read") {
		t.Fatalf("connected app not listed:\n%s", page.body)
	}
	b.post(e.srv.URL+"/account/apps/"+a.client.ID+"/revoke", url.Values{"csrf": {csrf}})
	e.do("GET", "/users", tok.AccessToken, nil).must(t, http.StatusUnauthorized)

	// Forms without the session's CSRF token are refused.
	if p := b.post(e.srv.URL+"/account/api-keys", url.Values{"name": {"x"}}); p.status != http.StatusForbidden {
		t.Fatalf("key creation without CSRF: %d", p.status)
	}
	// Signed out, the account redirects to the login page.
	if p := e.newBrowser().get(e.srv.URL + "/account"); !strings.Contains(p.body, `name="password"`) {
		t.Fatal("account page reachable without signing in")
	}
}

func TestDeveloperArea(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	admin := e.newOAuthApp(tn, tenancy.RoleAdmin, identity.ClientInput{})
	b := e.newBrowser()
	csrf := e.signIn(b, admin).field("csrf")

	created := b.post(e.srv.URL+"/developer/clients", url.Values{"csrf": {csrf}, "name": {"Roster Sync"},
		"description": {"Keeps rosters in sync"}, "redirectUris": {"https://roster.example/cb\nhttp://localhost:8000/cb"}})
	codes := codeTag.FindAllStringSubmatch(created.body, -1)
	if len(codes) < 2 || !strings.HasPrefix(codes[0][1], "cli_") || !strings.HasPrefix(codes[1][1], "cs_") {
		t.Fatalf("client ID and secret not shown on save:\n%s", created.body)
	}
	clientID, secret := codes[0][1], codes[1][1]
	list := b.get(e.srv.URL + "/developer")
	if !strings.Contains(list.body, "Roster Sync") || strings.Contains(list.body, secret) {
		t.Fatal("the list lacks the client or shows its secret again")
	}
	bad := b.post(e.srv.URL+"/developer/clients", url.Values{"csrf": {csrf}, "name": {"X"}, "redirectUris": {"http://evil.example/cb"}})
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, "https") {
		t.Fatalf("invalid redirect URI: %d", bad.status)
	}

	edited := b.post(e.srv.URL+"/developer/clients/"+clientID, url.Values{"csrf": {csrf}, "name": {"Roster Sync 2"},
		"redirectUris": {"https://roster.example/cb"}})
	if !strings.Contains(edited.body, "Roster Sync 2") {
		t.Fatalf("edit: %d", edited.status)
	}
	rotated := b.post(e.srv.URL+"/developer/clients/"+clientID+"/rotate", url.Values{"csrf": {csrf}})
	m := regexp.MustCompile(`<code>(cs_[^<]+)</code>`).FindStringSubmatch(rotated.body)
	if m == nil || m[1] == secret {
		t.Fatal("rotation did not show a new secret")
	}
	if got := e.clientAuthStatus(clientID, secret); got == http.StatusOK {
		t.Fatal("the old secret still authenticates after rotation")
	}
	if got := e.clientAuthStatus(clientID, m[1]); got != http.StatusOK {
		t.Fatalf("the new secret does not authenticate: %d", got)
	}
	b.post(e.srv.URL+"/developer/clients/"+clientID+"/delete", url.Values{"csrf": {csrf}})
	if strings.Contains(b.get(e.srv.URL+"/developer").body, clientID) {
		t.Fatal("deleted client still listed")
	}

	teacher := e.newOAuthApp(tn, tenancy.RoleTeacher, identity.ClientInput{})
	tb := e.newBrowser()
	e.signIn(tb, teacher)
	if p := tb.get(e.srv.URL + "/developer"); p.status != http.StatusForbidden {
		t.Fatalf("teacher in the developer area: %d", p.status)
	}
}

// TestPagesShowTheBounds: past MaxClients the developer page refuses a
// client with the bound's message and the API's 409, and registers
// nothing; past MaxActiveKeys the account page refuses a key the same way.
func TestPagesShowTheBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	admin := e.newOAuthApp(tn, tenancy.RoleAdmin, identity.ClientInput{})
	sys := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.org.ID))
	for range identity.MaxClients - 1 { // newOAuthApp registered one
		if _, _, err := e.app.Identity.CreateClient(sys, identity.ClientInput{Name: "Filler", RedirectURIs: []string{testRedirect}}); err != nil {
			t.Fatal(err)
		}
	}
	for range tenancy.MaxActiveKeys {
		if _, _, err := e.app.Tenancy.CreateAPIKey(sys, admin.user.ID, "filler"); err != nil {
			t.Fatal(err)
		}
	}
	b := e.newBrowser()
	csrf := e.signIn(b, admin).field("csrf")
	client := b.post(e.srv.URL+"/developer/clients", url.Values{"csrf": {csrf}, "name": {"One Too Many"}, "redirectUris": {"https://app.example/cb"}})
	if client.status != http.StatusConflict || !strings.Contains(client.body, "at most 50 OAuth clients") {
		t.Fatalf("client %d: %d\n%s", identity.MaxClients+1, client.status, client.body)
	}
	if list := b.get(e.srv.URL + "/developer"); strings.Contains(list.body, "One Too Many") {
		t.Fatal("the refused client was registered")
	}
	key := b.post(e.srv.URL+"/account/api-keys", url.Values{"csrf": {csrf}, "name": {"one too many"}})
	if key.status != http.StatusConflict || !strings.Contains(key.body, "at most 20 active API keys") || strings.Contains(key.body, "<code>ak_") {
		t.Fatalf("key %d: %d\n%s", tenancy.MaxActiveKeys+1, key.status, key.body)
	}
}

// clientAuthStatus is the introspection endpoint's status for a client's
// credentials: 200 when they authenticate.
func (e *env) clientAuthStatus(clientID, secret string) int {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.srv.URL+"/oauth/introspect", strings.NewReader("token=none"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(clientID, secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestDeveloperAreaWebhooks manages a webhook endpoint in the developer
// area: the secret is shown once, internal targets are refused, edits and
// rotation work, and teachers are kept out.
func TestDeveloperAreaWebhooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	admin := e.newOAuthApp(tn, tenancy.RoleAdmin, identity.ClientInput{})
	b := e.newBrowser()
	csrf := e.signIn(b, admin).field("csrf")

	bad := b.post(e.srv.URL+"/developer/webhooks", url.Values{"csrf": {csrf}, "url": {"https://169.254.169.254/latest"}, "events": {"user.created"}})
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, "metadata address") {
		t.Fatalf("metadata target: %d", bad.status)
	}
	created := b.post(e.srv.URL+"/developer/webhooks", url.Values{"csrf": {csrf}, "url": {"https://93.184.215.14/hooks"},
		"description": {"Gradebook"}, "events": {"result.graded", "user.created"}})
	codes := codeTag.FindAllStringSubmatch(created.body, -1)
	if len(codes) < 2 || !strings.HasPrefix(codes[0][1], "whe_") || !strings.HasPrefix(codes[1][1], "whsec_") {
		t.Fatalf("endpoint ID and secret not shown on save:\n%s", created.body)
	}
	id, secret := codes[0][1], codes[1][1]
	if list := b.get(e.srv.URL + "/developer/webhooks"); !strings.Contains(list.body, "Gradebook") || strings.Contains(list.body, secret) {
		t.Fatal("the list lacks the endpoint or shows its secret again")
	}
	edited := b.post(e.srv.URL+"/developer/webhooks/"+id, url.Values{"csrf": {csrf}, "url": {"https://93.184.215.14/hooks"},
		"description": {"Gradebook 2"}, "events": {"user.deleted"}})
	if !strings.Contains(edited.body, "Gradebook 2") || !strings.Contains(edited.body, `value="user.deleted" checked`) {
		t.Fatalf("edit: %d", edited.status)
	}
	rotated := b.post(e.srv.URL+"/developer/webhooks/"+id+"/rotate", url.Values{"csrf": {csrf}})
	if m := regexp.MustCompile(`<code>(whsec_[^<]+)</code>`).FindStringSubmatch(rotated.body); m == nil || m[1] == secret {
		t.Fatal("rotation did not show a new secret")
	}
	b.post(e.srv.URL+"/developer/webhooks/"+id+"/delete", url.Values{"csrf": {csrf}})
	if strings.Contains(b.get(e.srv.URL+"/developer/webhooks").body, id) {
		t.Fatal("deleted endpoint still listed")
	}

	teacher := e.newOAuthApp(tn, tenancy.RoleTeacher, identity.ClientInput{})
	tb := e.newBrowser()
	e.signIn(tb, teacher)
	if p := tb.get(e.srv.URL + "/developer/webhooks"); p.status != http.StatusForbidden {
		t.Fatalf("teacher in the webhooks pages: %d", p.status)
	}
}

// TestPagesRefuseTextTheDatabaseCannotHold sends a NUL, which PostgreSQL
// cannot store, and invalid UTF-8 through every kind of input the pages
// take: a 400 that says what is wrong, not "try again later".
func TestPagesRefuseTextTheDatabaseCannotHold(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	a := e.newOAuthApp(tn, tenancy.RoleOwner, identity.ClientInput{Name: "Gradebook"})
	b := e.newBrowser()
	csrf := e.signIn(b, a).field("csrf")
	refused := func(what string, p page) {
		t.Helper()
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, "Request refused") {
			t.Errorf("%s: %d\n%s", what, p.status, p.body)
		}
	}
	for _, bad := range []string{"a\x00b", "\xff"} {
		refused("profile name", b.post(e.srv.URL+"/account/profile", url.Values{"csrf": {csrf}, "name": {bad}}))
		refused("key name", b.post(e.srv.URL+"/account/api-keys", url.Values{"csrf": {csrf}, "name": {bad}}))
		refused("allowed app", b.post(e.srv.URL+"/account/allowed-apps", url.Values{"csrf": {csrf}, "clientId": {bad}}))
		refused("client", b.post(e.srv.URL+"/developer/clients", url.Values{"csrf": {csrf}, "name": {bad}, "redirectUris": {"https://app.example/cb"}}))
		refused("field name", b.post(e.srv.URL+"/developer/clients", url.Values{"csrf": {csrf}, bad: {"x"}}))
		refused("path", b.post(e.srv.URL+"/account/apps/"+url.PathEscape(bad)+"/revoke", url.Values{"csrf": {csrf}}))
		refused("query", b.get(e.srv.URL+"/login?authRequestID="+url.QueryEscape(bad)))
		login := e.newBrowser()
		refused("login", login.post(e.srv.URL+"/login", url.Values{"csrf": {login.get(e.srv.URL + "/login").field("csrf")}, "email": {a.email + bad}, "password": {"x"}}))
	}
	// The page still works for text that keeps the rule.
	if p := b.post(e.srv.URL+"/account/profile", url.Values{"csrf": {csrf}, "name": {"Zoë"}}); !strings.Contains(p.body, `value="Zoë"`) {
		t.Fatalf("profile update after the refusals: %d", p.status)
	}
}
