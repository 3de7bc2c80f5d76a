package identity_test

import (
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/testkit/apptest"
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
	a, b := apptest.NewOn(t, db, nil), apptest.NewOn(t, db, nil)
	tn := a.NewTenant("DE", "pro")
	app := a.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{})
	app.Conf.Scopes = []string{"profile", "users:read"}
	tok := a.Token(app)
	eventually.Succeeds(t, 10*time.Second, func() error {
		if !a.App.Tenancy.CredentialListenerUp() || !b.App.Tenancy.CredentialListenerUp() {
			return errors.New("credential listeners not connected")
		}
		return nil
	})
	for range 2 { // the second request of each is served from its cache
		a.Do("GET", "/me", tok.AccessToken, nil).Must(t, http.StatusOK)
		b.Do("GET", "/me", tok.AccessToken, nil).Must(t, http.StatusOK)
	}
	res, err := http.PostForm(a.Srv.URL+"/oauth/revoke", url.Values{
		"token": {tok.AccessToken}, "client_id": {app.Conf.ClientID}, "client_secret": {app.Conf.ClientSecret}})
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %v %v", res, err)
	}
	res.Body.Close()
	a.Do("GET", "/me", tok.AccessToken, nil).Must(t, http.StatusUnauthorized)
	eventually.Succeeds(t, time.Second, func() error {
		switch status := b.Do("GET", "/me", tok.AccessToken, nil).Status; status {
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
