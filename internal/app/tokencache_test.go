package app_test

import (
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/identity"
	"github.com/assessd/assessd/internal/testkit/eventually"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// TestAccessTokenRevocationReachesOtherInstances: two instances share a
// database; an access token both verified (and cached) is refused by the
// revoking instance on the very next request and by the other as soon as
// the revocation's notification arrives.
func TestAccessTokenRevocationReachesOtherInstances(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	a, b := newEnvOn(t, db, nil), newEnvOn(t, db, nil)
	tn := a.newTenant("DE", "pro")
	app := a.newOAuthApp(tn, tenancy.RoleTeacher, identity.ClientInput{})
	app.conf.Scopes = []string{"profile", "users:read"}
	tok := a.token(app)
	eventually.Succeeds(t, 10*time.Second, func() error {
		if !a.app.Tenancy.CredentialListenerUp() || !b.app.Tenancy.CredentialListenerUp() {
			return errors.New("credential listeners not connected")
		}
		return nil
	})
	for range 2 { // the second request of each is served from its cache
		a.do("GET", "/me", tok.AccessToken, nil).must(t, http.StatusOK)
		b.do("GET", "/me", tok.AccessToken, nil).must(t, http.StatusOK)
	}
	res, err := http.PostForm(a.srv.URL+"/oauth/revoke", url.Values{
		"token": {tok.AccessToken}, "client_id": {app.conf.ClientID}, "client_secret": {app.conf.ClientSecret}})
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %v %v", res, err)
	}
	res.Body.Close()
	a.do("GET", "/me", tok.AccessToken, nil).must(t, http.StatusUnauthorized)
	eventually.Succeeds(t, time.Second, func() error {
		switch status := b.do("GET", "/me", tok.AccessToken, nil).status; status {
		case http.StatusUnauthorized:
			return nil
		case http.StatusOK:
			return errors.New("instance b still accepts an access token revoked on instance a")
		default:
			t.Fatalf("GET /me with the revoked token: status %d", status)
			return nil
		}
	})
}
