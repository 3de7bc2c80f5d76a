package tenancy_test

import (
	"context"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/platform/errs"
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
	for !a.CredentialListenerUp() || !b.CredentialListenerUp() {
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if _, err := a.AuthenticateAPIKey(ctx, plain); err != nil {
		t.Fatal(err) // now cached in a
	}
	if err := b.RevokeAPIKey(sys, k.ID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		_, err := a.AuthenticateAPIKey(ctx, plain)
		if errs.Is(err, errs.KindUnauthenticated) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance a still accepts a key revoked by instance b: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOnlyRoleChangesPurgeCredentialCaches: a cached key holds its user's
// role and nothing else a patch changes, so renaming a user must not make
// every instance drop every cached key, while a role change must.
func TestOnlyRoleChangesPurgeCredentialCaches(t *testing.T) {
	db := storetest.New(t)
	s := tenancy.NewService(db)
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	ready, notified := make(chan struct{}), make(chan struct{}, 16)
	go func() {
		_ = db.Listen(ctx, "assessd_credentials", func() { close(ready) }, func() { notified <- struct{}{} })
	}()
	<-ready

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
	// Notifications arrive in commit order: the first one must be the role
	// change's, and no other may follow.
	select {
	case <-notified:
	case <-ctx.Done():
		t.Fatal("a role change sent no credential notification")
	}
	select {
	case <-notified:
		t.Fatal("a rename purged the credential caches")
	case <-time.After(300 * time.Millisecond):
	}
}

// TestKeyUseIsWrittenOffTheRequestPath: authenticating writes nothing; the
// flush writes the time of the use, and a second use within the minute is
// not noted again.
func TestKeyUseIsWrittenOffTheRequestPath(t *testing.T) {
	db := storetest.New(t)
	s := tenancy.NewService(db)
	ctx := context.Background()
	org, err := s.CreateOrg(ctx, tenancy.NewOrg{Name: "X", Country: "US"})
	if err != nil {
		t.Fatal(err)
	}
	sys := tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	u, err := s.CreateUser(sys, tenancy.NewUser{Email: "u@x.test", Name: "U", Role: tenancy.RoleTeacher})
	if err != nil {
		t.Fatal(err)
	}
	_, plain, err := s.CreateAPIKey(sys, u.ID, "k")
	if err != nil {
		t.Fatal(err)
	}
	lastUsed := func() *time.Time {
		t.Helper()
		keys, err := s.ListAPIKeys(sys, u.ID)
		if err != nil || len(keys) != 1 {
			t.Fatalf("ListAPIKeys = %v, %v", keys, err)
		}
		return keys[0].LastUsedAt
	}
	before := time.Now()
	if _, err := s.AuthenticateAPIKey(ctx, plain); err != nil {
		t.Fatal(err)
	}
	if at := lastUsed(); at != nil {
		t.Fatalf("authentication wrote last_used_at = %v itself", at)
	}
	if err := s.FlushKeyUses(ctx); err != nil {
		t.Fatal(err)
	}
	first := lastUsed()
	if first == nil || first.Before(before.Add(-time.Second)) || first.After(time.Now()) {
		t.Fatalf("after the flush last_used_at = %v, want the time of the use (after %v)", first, before)
	}
	if _, err := s.AuthenticateAPIKey(ctx, plain); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushKeyUses(ctx); err != nil {
		t.Fatal(err)
	}
	if again := lastUsed(); again == nil || !again.Equal(*first) {
		t.Fatalf("a second use within the minute changed last_used_at from %v to %v", first, again)
	}
}
