package app_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

// TestExpiredAuthRequestsAreSwept: the sweeper that App.Start runs (off
// the request path) deletes the auth requests expired over a day ago and
// keeps the others.
func TestExpiredAuthRequestsAreSwept(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64
	e := apptest.NewWithClock(t, func() time.Time { return time.Now().Add(time.Duration(offset.Load())) })
	tn := e.NewTenant("DE", "pro")
	a := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{})
	a.Conf.Scopes = []string{"openid"}
	ctx := context.Background()
	if p := e.NewBrowser().Get(a.Conf.AuthCodeURL("state-123", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))); p.Status != http.StatusOK {
		t.Fatalf("authorize: %d %s", p.Status, p.Location)
	}
	for _, c := range []struct {
		later time.Duration
		want  int
	}{{23 * time.Hour, 1}, {25 * time.Hour, 0}} {
		offset.Store(int64(c.later))
		if err := e.App.Identity.SweepExpired(ctx); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := e.DB.Unscoped().QueryRow(ctx, `SELECT count(*) FROM oauth_auth_requests`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != c.want {
			t.Fatalf("%v after the request, the sweep left %d auth requests, want %d", c.later, n, c.want)
		}
	}
}

// TestExpiredTokensAreSwept: the same sweep deletes OAuth tokens a day
// after they expire (an access token after 24 hours, a refresh token after
// 30 days), whichever organization they belong to, and keeps the others;
// a grant goes with its last token.
func TestExpiredTokensAreSwept(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64
	e := apptest.NewWithClock(t, func() time.Time { return time.Now().Add(time.Duration(offset.Load())) })
	ctx := context.Background()
	var orgs []string
	for _, country := range []string{"DE", "US"} {
		tn := e.NewTenant(country, "pro")
		a := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{})
		a.Conf.Scopes = []string{"openid", "offline_access"}
		e.Token(a)
		orgs = append(orgs, tn.Org.ID)
	}
	count := func(table string) (n int) {
		for _, org := range orgs {
			ctx := store.WithOrg(ctx, org)
			var c int
			if err := e.DB.Q(ctx).QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&c); err != nil {
				t.Fatal(err)
			}
			n += c
		}
		return n
	}
	// A grant goes with its last token.
	for _, c := range []struct {
		later          time.Duration
		tokens, grants int
	}{{47 * time.Hour, 4, 2}, {49 * time.Hour, 2, 2}, {30*24*time.Hour + 23*time.Hour, 2, 2}, {30*24*time.Hour + 25*time.Hour, 0, 0}} {
		offset.Store(int64(c.later))
		if err := e.App.Identity.SweepExpired(ctx); err != nil {
			t.Fatal(err)
		}
		if tokens, grants := count("oauth_tokens"), count("oauth_grants"); tokens != c.tokens || grants != c.grants {
			t.Fatalf("%v after issuing, the sweep left %d tokens and %d grants, want %d and %d", c.later, tokens, grants, c.tokens, c.grants)
		}
	}
}
