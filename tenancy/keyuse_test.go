package tenancy_test

import (
	"context"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

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
