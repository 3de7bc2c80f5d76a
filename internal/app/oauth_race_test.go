package app_test

import (
	"context"
	"net/http"
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
