package tenancy_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/platform/errs"
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
