package identity_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// TestCodeAndRefreshTokenUsedConcurrently sends one authorization code,
// then one refresh token, in eight token requests at once, as a client
// retrying on a timeout or two tabs refreshing together do. One exchange
// succeeds; the others are invalid_grant, never a second grant or a
// server error, and they are replays, which revoke what the first got.
// Eight exchanges used to hold the pool's four connections and wait for a
// fifth, which stopped the server.
func TestCodeAndRefreshTokenUsedConcurrently(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	a := e.NewOAuthApp(e.NewTenant("DE", "pro"), tenancy.RoleTeacher, clients.ClientInput{})
	a.Conf.Scopes = []string{"openid", "offline_access"}
	ctx := context.Background()
	race := func(what string, exchange func() (*oauth2.Token, error)) *oauth2.Token {
		t.Helper()
		var (
			mu      sync.Mutex
			won     *oauth2.Token
			refused int
			wg      sync.WaitGroup
		)
		for range 8 {
			wg.Go(func() {
				tok, err := exchange()
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil && won == nil:
					won = tok
				case err == nil:
					t.Errorf("%s: a second exchange succeeded", what)
				case apptest.OAuthError(err) == "invalid_grant":
					refused++
				default:
					t.Errorf("%s: %v", what, err)
				}
			})
		}
		wg.Wait()
		if won == nil || refused != 7 {
			t.Fatalf("%s: %d refused, success %v; want one success and seven invalid_grant", what, refused, won != nil)
		}
		return won
	}
	authorized := func() (code, verifier string) {
		verifier = oauth2.GenerateVerifier()
		return e.Authorize(e.NewBrowser(), a, "approve", oauth2.S256ChallengeOption(verifier)).Query().Get("code"), verifier
	}
	// A code presented again is a replay: the grant it was spent on is
	// revoked, whichever request spent it.
	code, verifier := authorized()
	var err error
	tok := race("authorization code", func() (*oauth2.Token, error) { return a.Conf.Exchange(ctx, code, oauth2.VerifierOption(verifier)) })
	e.Do("GET", "/me", tok.AccessToken, nil).Must(t, http.StatusUnauthorized)

	code, verifier = authorized()
	if tok, err = a.Conf.Exchange(ctx, code, oauth2.VerifierOption(verifier)); err != nil {
		t.Fatal(err)
	}
	// So is a refresh token presented again.
	tok = race("refresh token", func() (*oauth2.Token, error) {
		return a.Conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	})
	e.Do("GET", "/me", tok.AccessToken, nil).Must(t, http.StatusUnauthorized)
}

// TestApproveClickedTwice posts the consent form twice, as a double click
// does: the browser follows the second answer, which goes on to the app
// as the first did. Once the app has exchanged the code, the same form is
// refused rather than sending a second code, whose exchange would be a
// replay.
func TestApproveClickedTwice(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	a := e.NewOAuthApp(e.NewTenant("DE", "pro"), tenancy.RoleTeacher, clients.ClientInput{})
	a.Conf.Scopes = []string{"openid"}
	b := e.NewBrowser()
	verifier := oauth2.GenerateVerifier()
	login := b.Get(a.Conf.AuthCodeURL("state-1", oauth2.S256ChallengeOption(verifier)))
	consent := b.Post(e.Srv.URL+"/login", url.Values{"csrf": {login.Field("csrf")}, "authRequestID": {login.Field("authRequestID")},
		"email": {a.Email}, "password": {a.Password}})
	approve := url.Values{"csrf": {consent.Field("csrf")}, "authRequestID": {consent.Field("authRequestID")}, "decision": {"approve"}}
	var code string
	for i := range 2 {
		back := b.Post(e.Srv.URL+"/consent", approve)
		u, err := url.Parse(back.Location)
		if err != nil || !strings.HasPrefix(back.Location, apptest.TestRedirect) || u.Query().Get("code") == "" {
			t.Fatalf("approval %d went to %q (%d)\n%s", i+1, back.Location, back.Status, back.Body)
		}
		code = u.Query().Get("code")
	}
	if _, err := a.Conf.Exchange(context.Background(), code, oauth2.VerifierOption(verifier)); err != nil {
		t.Fatalf("exchanging the code of the second approval: %v", err)
	}
	if again := b.Post(e.Srv.URL+"/consent", approve); again.Status != http.StatusBadRequest {
		t.Fatalf("approving a spent request: %d %s", again.Status, again.Location)
	}
}

// TestOAuthRacingDeletions authorizes, signs in, consents, makes an API
// key, and exchanges a code or a refresh token while the user or the app is
// deleted: each answers as it would a moment later (invalid_client, a wrong
// password, a stale link, sign in again, invalid_grant), never
// server_error, a 503 or a token reuse.
func TestOAuthRacingDeletions(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewURL(t)
	e := apptest.NewAt(t, dbURL)
	ctx := context.Background()
	newApp := func() *apptest.OAuthApp {
		a := e.NewOAuthApp(e.NewTenant("US", "pro"), tenancy.RoleTeacher, clients.ClientInput{})
		a.Conf.Scopes = []string{"profile", "offline_access"}
		return a
	}
	exchange := func(a *apptest.OAuthApp) func() error {
		verifier := oauth2.GenerateVerifier()
		code := e.CodeFor(a, oauth2.S256ChallengeOption(verifier))
		return func() error {
			_, err := a.Conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
			return err
		}
	}
	refresh := func(a *apptest.OAuthApp) func() error {
		tok := e.Token(a)
		return func() error {
			_, err := a.Conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
			return err
		}
	}
	user := func(a *apptest.OAuthApp) (string, string) { return "users", a.User.ID }
	app := func(a *apptest.OAuthApp) (string, string) { return "oauth_clients", a.Client.ID }
	cases := []struct {
		name    string
		request func(*apptest.OAuthApp) func() error
		deleted func(*apptest.OAuthApp) (table, id string)
		want    string
	}{
		{"a code exchanged as its user is deleted", exchange, user, "invalid_grant"},
		{"a code exchanged as its app is deleted", exchange, app, "invalid_client"},
		{"a refresh token exchanged as its user is deleted", refresh, user, "invalid_grant"},
		{"a refresh token exchanged as its app is deleted", refresh, app, "invalid_grant"},
	}
	// The authorization request is stored after its client is read. Its
	// redirect URI was checked by then, so the error goes back to the app.
	a := newApp()
	var p apptest.Page
	_ = storetest.DeleteDuring(t, dbURL, `DELETE FROM oauth_clients WHERE id = $1`, []any{a.Client.ID}, func() error {
		p = e.NewBrowser().Get(a.Conf.AuthCodeURL("state-123"))
		return nil
	})
	if p.Status != http.StatusFound || !strings.Contains(p.Location, "error=invalid_client") {
		t.Errorf("authorizing as the app is deleted: %d %s, want a redirect with invalid_client", p.Status, p.Location)
	}
	// Signing in reads the user, then stores the browser session.
	a = newApp()
	b := e.NewBrowser()
	login := b.Get(a.Conf.AuthCodeURL("state-123"))
	form := url.Values{"csrf": {login.Field("csrf")}, "authRequestID": {login.Field("authRequestID")}, "email": {a.Email}, "password": {a.Password}}
	_ = storetest.DeleteDuring(t, dbURL, `DELETE FROM users WHERE id = $1`, []any{a.User.ID}, func() error {
		p = b.Post(e.Srv.URL+"/login", form)
		return nil
	})
	if p.Status != http.StatusUnauthorized || !strings.Contains(p.Body, "The email or password is not correct.") {
		t.Errorf("signing in as the user is deleted: %d\n%s", p.Status, p.Body)
	}
	// Consent given as the app or the user is deleted.
	consentRacing := func(deleted func(*apptest.OAuthApp) (table, id string)) apptest.Page {
		a := newApp()
		b := e.NewBrowser()
		login := b.Get(a.Conf.AuthCodeURL("state-123"))
		consent := b.Post(e.Srv.URL+"/login", url.Values{"csrf": {login.Field("csrf")}, "authRequestID": {login.Field("authRequestID")}, "email": {a.Email}, "password": {a.Password}})
		table, id := deleted(a)
		var p apptest.Page
		_ = storetest.DeleteDuring(t, dbURL, `DELETE FROM `+table+` WHERE id = $1`, []any{id}, func() error {
			p = b.Post(e.Srv.URL+"/consent", url.Values{"csrf": {consent.Field("csrf")}, "authRequestID": {consent.Field("authRequestID")}, "decision": {"approve"}})
			return nil
		})
		return p
	}
	if p := consentRacing(app); p.Status != http.StatusBadRequest || !strings.Contains(p.Body, "This sign-in link is no longer valid") {
		t.Errorf("consenting as the app is deleted: %d\n%s", p.Status, p.Body)
	}
	if p := consentRacing(user); p.Status != http.StatusOK || p.URL.Path != "/login" || !strings.Contains(p.Body, `name="password"`) {
		t.Errorf("consenting as the user is deleted: %d %s, want the sign-in form", p.Status, p.URL)
	}

	// An API key made on the account page as its user is deleted.
	a = newApp()
	b = e.NewBrowser()
	csrf := e.SignIn(b, a).Field("csrf")
	_ = storetest.DeleteDuring(t, dbURL, `DELETE FROM users WHERE id = $1`, []any{a.User.ID}, func() error {
		p = b.Post(e.Srv.URL+"/account/api-keys", url.Values{"csrf": {csrf}, "name": {"export"}})
		return nil
	})
	if p.Status != http.StatusOK || p.URL.Path != "/login" {
		t.Errorf("an API key made as its user is deleted: %d %s, want the sign-in page", p.Status, p.URL)
	}
	for _, c := range cases {
		a := newApp()
		send := c.request(a)
		table, id := c.deleted(a)
		err := storetest.DeleteDuring(t, dbURL, `DELETE FROM `+table+` WHERE id = $1`, []any{id}, send)
		// A token deleted with its grant was not reused: reporting reuse
		// would tell the app and its user of a theft that never was.
		if got := apptest.OAuthError(err); got != c.want || strings.Contains(err.Error(), "reused") {
			t.Errorf("%s: %v, want %s", c.name, err, c.want)
		}
	}
}
