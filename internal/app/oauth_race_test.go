package app_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/assessd/assessd/internal/identity"
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
	e := newEnv(t)
	a := e.newOAuthApp(e.newTenant("DE", "pro"), tenancy.RoleTeacher, identity.ClientInput{})
	a.conf.Scopes = []string{"openid", "offline_access"}
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
				case oauthError(err) == "invalid_grant":
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
		return e.authorize(e.newBrowser(), a, "approve", oauth2.S256ChallengeOption(verifier)).Query().Get("code"), verifier
	}
	// A code presented again is a replay: the grant it was spent on is
	// revoked, whichever request spent it.
	code, verifier := authorized()
	var err error
	tok := race("authorization code", func() (*oauth2.Token, error) { return a.conf.Exchange(ctx, code, oauth2.VerifierOption(verifier)) })
	e.do("GET", "/me", tok.AccessToken, nil).must(t, http.StatusUnauthorized)

	code, verifier = authorized()
	if tok, err = a.conf.Exchange(ctx, code, oauth2.VerifierOption(verifier)); err != nil {
		t.Fatal(err)
	}
	// So is a refresh token presented again.
	tok = race("refresh token", func() (*oauth2.Token, error) {
		return a.conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	})
	e.do("GET", "/me", tok.AccessToken, nil).must(t, http.StatusUnauthorized)
}

// TestApproveClickedTwice posts the consent form twice, as a double click
// does: the browser follows the second answer, which goes on to the app
// as the first did. Once the app has exchanged the code, the same form is
// refused rather than sending a second code, whose exchange would be a
// replay.
func TestApproveClickedTwice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.newOAuthApp(e.newTenant("DE", "pro"), tenancy.RoleTeacher, identity.ClientInput{})
	a.conf.Scopes = []string{"openid"}
	b := e.newBrowser()
	verifier := oauth2.GenerateVerifier()
	login := b.get(a.conf.AuthCodeURL("state-1", oauth2.S256ChallengeOption(verifier)))
	consent := b.post(e.srv.URL+"/login", url.Values{"csrf": {login.field("csrf")}, "authRequestID": {login.field("authRequestID")},
		"email": {a.email}, "password": {a.password}})
	approve := url.Values{"csrf": {consent.field("csrf")}, "authRequestID": {consent.field("authRequestID")}, "decision": {"approve"}}
	var code string
	for i := range 2 {
		back := b.post(e.srv.URL+"/consent", approve)
		u, err := url.Parse(back.location)
		if err != nil || !strings.HasPrefix(back.location, testRedirect) || u.Query().Get("code") == "" {
			t.Fatalf("approval %d went to %q (%d)\n%s", i+1, back.location, back.status, back.body)
		}
		code = u.Query().Get("code")
	}
	if _, err := a.conf.Exchange(context.Background(), code, oauth2.VerifierOption(verifier)); err != nil {
		t.Fatalf("exchanging the code of the second approval: %v", err)
	}
	if again := b.post(e.srv.URL+"/consent", approve); again.status != http.StatusBadRequest {
		t.Fatalf("approving a spent request: %d %s", again.status, again.location)
	}
}
