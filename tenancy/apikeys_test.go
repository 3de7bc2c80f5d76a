package tenancy_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/eventually"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// TestRevocationReachesOtherInstances runs two instances on one database:
// a key cached by one is refused there as soon as the other revokes it.
func TestRevocationReachesOtherInstances(t *testing.T) {
	db := storetest.New(t)
	a, b := tenancy.NewService(db), tenancy.NewService(db)
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	go a.WatchCredentialChanges(ctx)
	go b.WatchCredentialChanges(ctx)

	org, err := a.CreateOrg(ctx, tenancy.NewOrg{Name: "X", Country: "US"})
	if err != nil {
		t.Fatal(err)
	}
	sys := tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	u, err := a.CreateUser(sys, tenancy.NewUser{Email: "k@x.test", Name: "K", Role: tenancy.RoleTeacher})
	if err != nil {
		t.Fatal(err)
	}
	k, plain, err := a.CreateAPIKey(sys, u.ID, "k")
	if err != nil {
		t.Fatal(err)
	}
	// Both watches must be listening before the revocation is sent, or a
	// cached key could miss its notification.
	eventually.Succeeds(t, 10*time.Second, func() error {
		if !a.CredentialListenerUp() || !b.CredentialListenerUp() {
			return errors.New("credential listeners not up")
		}
		return nil
	})
	if _, err := a.AuthenticateAPIKey(ctx, plain); err != nil {
		t.Fatal(err) // now cached in a
	}
	if err := b.RevokeAPIKey(sys, k.ID); err != nil {
		t.Fatal(err)
	}
	eventually.Succeeds(t, 3*time.Second, func() error {
		if _, err := a.AuthenticateAPIKey(ctx, plain); !errs.Is(err, errs.KindUnauthenticated) {
			return fmt.Errorf("instance a still accepts a key revoked by instance b: %v", err)
		}
		return nil
	})
}

// TestOnlyRoleChangesPurgeCredentialCaches: a cached key holds its user's
// role and nothing else a patch changes, so renaming a user must not make
// every instance drop every cached key, while a role change must.
func TestOnlyRoleChangesPurgeCredentialCaches(t *testing.T) {
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	dbURL := storetest.NewURL(t)
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := tenancy.NewService(db)
	// A listener of its own reads payloads: the test's marker, sent last,
	// ends the wait, since notifications arrive in commit order.
	listener, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(context.Background())
	if _, err := listener.Exec(ctx, "LISTEN assessd_credentials"); err != nil {
		t.Fatal(err)
	}

	org, err := s.CreateOrg(ctx, tenancy.NewOrg{Name: "X", Country: "US"})
	if err != nil {
		t.Fatal(err)
	}
	sys := tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	u, err := s.CreateUser(sys, tenancy.NewUser{Email: "r@x.test", Name: "R", Role: tenancy.RoleTeacher})
	if err != nil {
		t.Fatal(err)
	}
	name, role := "Renamed", tenancy.RoleStudent
	if _, err := s.UpdateUser(sys, u.ID, tenancy.UserPatch{Name: &name}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateUser(sys, u.ID, tenancy.UserPatch{Role: &role}); err != nil {
		t.Fatal(err)
	}
	const marker = "end of test"
	if _, err := listener.Exec(ctx, "SELECT pg_notify('assessd_credentials', $1)", marker); err != nil {
		t.Fatal(err)
	}
	purges := 0
	for {
		n, err := listener.WaitForNotification(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n.Payload == marker {
			break
		}
		purges++
	}
	// The rename must have sent nothing, the role change one notification.
	if purges != 1 {
		t.Fatalf("a rename and a role change sent %d credential notifications, want 1 (the role change's)", purges)
	}
}

// TestCredentialCacheDropsLookupsOlderThanAPurge: what a lookup read
// before a purge (a revocation committing meanwhile) is not cached.
func TestCredentialCacheDropsLookupsOlderThanAPurge(t *testing.T) {
	s := tenancy.NewService(storetest.New(t))
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	go s.WatchCredentialChanges(ctx)
	eventually.Succeeds(t, 10*time.Second, func() error {
		if !s.CredentialListenerUp() {
			return errors.New("credential listener not up")
		}
		return nil
	})
	hash := sha256.Sum256([]byte("bearer"))
	_, _, ticket, _ := s.CachedCredential(hash)
	s.PurgeCredentials()
	s.CacheCredential(ticket, hash, &tenancy.Caller{}, time.Time{})
	if _, _, _, ok := s.CachedCredential(hash); ok {
		t.Fatal("a lookup older than a purge was cached")
	}
	_, _, ticket, _ = s.CachedCredential(hash)
	s.CacheCredential(ticket, hash, &tenancy.Caller{}, time.Time{})
	if _, _, _, ok := s.CachedCredential(hash); !ok {
		t.Fatal("a fresh lookup was not cached")
	}
}

// TestActiveKeysAreBounded: a user holds MaxActiveKeys unrevoked keys; one
// more is a 409 API_KEY_LIMIT, and revoking one makes room. The list holds
// the active keys and only the ListedRevokedKeys revoked last.
func TestActiveKeysAreBounded(t *testing.T) {
	ctx := context.Background()
	s := tenancy.NewService(storetest.New(t))
	org, err := s.CreateOrg(ctx, tenancy.NewOrg{Name: "X", Country: "US"})
	if err != nil {
		t.Fatal(err)
	}
	sys := tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	u, err := s.CreateUser(sys, tenancy.NewUser{Email: "k@x.test", Name: "K", Role: tenancy.RoleTeacher})
	if err != nil {
		t.Fatal(err)
	}
	create := func() (tenancy.APIKey, error) {
		k, _, err := s.CreateAPIKey(sys, u.ID, "k")
		return k, err
	}
	// Revoke more keys than the list shows, oldest first.
	var revoked []string
	for range tenancy.ListedRevokedKeys + 5 {
		k, err := create()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.RevokeAPIKey(sys, k.ID); err != nil {
			t.Fatal(err)
		}
		revoked = append(revoked, k.ID)
	}
	var active []string
	for range tenancy.MaxActiveKeys {
		k, err := create()
		if err != nil {
			t.Fatalf("revoked keys counted against the bound: %v", err)
		}
		active = append(active, k.ID)
	}
	if _, err := create(); !isReason(err, errs.KindConflict, "API_KEY_LIMIT") {
		t.Fatalf("key %d: %v, want 409 API_KEY_LIMIT", tenancy.MaxActiveKeys+1, err)
	}
	keys, err := s.ListAPIKeys(sys, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, k := range keys {
		listed = append(listed, k.ID)
	}
	want := append(slices.Clone(revoked[len(revoked)-tenancy.ListedRevokedKeys:]), active...)
	slices.Reverse(want)
	if !slices.Equal(listed, want) {
		t.Fatalf("listed %d keys %v,\nwant the %d active and the %d revoked last, newest first: %v", len(listed), listed, len(active), tenancy.ListedRevokedKeys, want)
	}
	if err := s.RevokeAPIKey(sys, active[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := create(); err != nil {
		t.Fatalf("after a revocation: %v", err)
	}
}

func isReason(err error, kind errs.Kind, reason string) bool {
	e, ok := errs.As(err)
	return ok && e.Kind == kind && e.Reason == reason
}
