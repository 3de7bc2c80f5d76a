package account_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

func TestMain(m *testing.M) { apptest.Main(m) }

func TestAccountPage(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	a := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{Name: "Gradebook"})
	b := e.NewBrowser()
	account := e.SignIn(b, a)
	csrf := account.Field("csrf")

	// Profile name.
	if p := b.Post(e.Srv.URL+"/account/profile", url.Values{"csrf": {csrf}, "name": {"Renamed Teacher"}}); !strings.Contains(p.Body, `value="Renamed Teacher"`) {
		t.Fatalf("profile update: %d", p.Status)
	}
	// API key: shown once, works, revocable.
	created := b.Post(e.Srv.URL+"/account/api-keys", url.Values{"csrf": {csrf}, "name": {"export"}})
	codes := created.Codes()
	if len(codes) == 0 || !strings.HasPrefix(codes[0], "ak_") {
		t.Fatalf("new key not shown:\n%s", created.Body)
	}
	key := codes[0]
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

// TestPagesRefuseTextTheDatabaseCannotHold sends a NUL, which PostgreSQL
// cannot store, and invalid UTF-8 through every kind of input the pages
// take: a 400 that says what is wrong, not "try again later".
func TestPagesRefuseTextTheDatabaseCannotHold(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	a := e.NewOAuthApp(tn, tenancy.RoleOwner, clients.ClientInput{Name: "Gradebook"})
	b := e.NewBrowser()
	csrf := e.SignIn(b, a).Field("csrf")
	refused := func(what string, p apptest.Page) {
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

// TestAccountPageAllowedApps allows and removes an app from the account
// page, as an owner; a teacher does not see the section.
func TestAccountPageAllowedApps(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	vendor := e.NewTenant("US", "pro")
	school := e.NewTenant("FR", "pro")
	app := e.NewOAuthApp(vendor, tenancy.RoleTeacher, clients.ClientInput{Name: "Multi School Sync"})
	owner := e.NewOAuthApp(school, tenancy.RoleOwner, clients.ClientInput{})

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

	teacher := e.NewOAuthApp(school, tenancy.RoleTeacher, clients.ClientInput{})
	tb := e.NewBrowser()
	if page := e.SignIn(tb, teacher); strings.Contains(page.Body, "allowed-apps") {
		t.Fatal("a teacher sees the allowed apps section")
	}
	if p := tb.Post(e.Srv.URL+"/account/allowed-apps", url.Values{"csrf": {tb.Get(e.Srv.URL + "/account").Field("csrf")}, "clientId": {app.Client.ID}}); p.Status == http.StatusSeeOther || p.Status == http.StatusOK && strings.Contains(p.Body, "app-allowed") {
		t.Fatalf("a teacher allowed an app: %d", p.Status)
	}
}
