package tenancy_test

import (
	"context"
	"errors"
	"testing"

	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// TestAUserEventThatFailsUndoesTheChange: UserEvents runs inside the
// transaction of the change it hears of, so its failure leaves neither the
// user nor the change's audit entry behind.
func TestAUserEventThatFailsUndoesTheChange(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	s := tenancy.NewService(db)
	org, err := s.CreateOrg(ctx, tenancy.NewOrg{Name: "X", Country: "US"})
	if err != nil {
		t.Fatal(err)
	}
	sys := tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	refused := errors.New("refused")
	var heard []tenancy.UserChange
	s.UserEvents = func(_ context.Context, change tenancy.UserChange, u tenancy.User) error {
		if u.Email != "r@x.test" {
			t.Errorf("heard of %+v", u)
		}
		heard = append(heard, change)
		return refused
	}
	if _, err := s.CreateUser(sys, tenancy.NewUser{Email: "r@x.test", Name: "R", Role: tenancy.RoleTeacher}); !errors.Is(err, refused) {
		t.Fatalf("CreateUser = %v, want the event's failure", err)
	}
	if len(heard) != 1 || heard[0] != tenancy.UserCreated {
		t.Errorf("UserEvents heard %v, want [%s]", heard, tenancy.UserCreated)
	}
	var users, entries int
	if err := db.Q(sys).QueryRow(sys, `SELECT (SELECT count(*) FROM users), (SELECT count(*) FROM audit_logs WHERE action = 'user.created')`).Scan(&users, &entries); err != nil {
		t.Fatal(err)
	}
	if users != 0 || entries != 0 {
		t.Errorf("%d users and %d user.created audit entries remain, want none", users, entries)
	}
}
