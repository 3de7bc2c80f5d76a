package tenancy_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// TestLookupsForOtherPackages covers what other packages read of the users
// and orgs tables: a user without a permission check, a user's existence
// inside the caller's transaction, another organization's user not found,
// the AI region as part of the caller's statement, the organization by its
// scope, and a duplicate email reported as EMAIL_TAKEN through the store's
// sentinel.
func TestLookupsForOtherPackages(t *testing.T) {
	db := storetest.New(t)
	s := tenancy.NewService(db)
	ctx := context.Background()
	orgA, err := s.CreateOrg(ctx, tenancy.NewOrg{Name: "A", Country: "DE"})
	if err != nil {
		t.Fatal(err)
	}
	orgB, err := s.CreateOrg(ctx, tenancy.NewOrg{Name: "B", Country: "US"})
	if err != nil {
		t.Fatal(err)
	}
	sysA := tenancy.WithCaller(ctx, tenancy.SystemCaller(orgA.ID))
	u, err := s.CreateUser(sysA, tenancy.NewUser{Email: "s@x.test", Name: "Sam", Role: tenancy.RoleStudent})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.CreateUser(sysA, tenancy.NewUser{Email: "S@x.test", Name: "Twin", Role: tenancy.RoleStudent})
	if e, ok := errs.As(err); !ok || e.Kind != errs.KindConflict || e.Reason != "EMAIL_TAKEN" {
		t.Fatalf("duplicate email: err = %v, want EMAIL_TAKEN", err)
	}

	// No caller at all, only the organization's scope: sign-in and userinfo.
	scopedA := store.WithOrg(ctx, orgA.ID)
	got, err := s.LookupUser(scopedA, u.ID)
	if err != nil || got.Name != "Sam" || got.Role != tenancy.RoleStudent {
		t.Fatalf("LookupUser = %+v, %v", got, err)
	}
	scopedB := store.WithOrg(ctx, orgB.ID)
	if _, err := s.LookupUser(scopedB, u.ID); !errs.Is(err, errs.KindNotFound) {
		t.Fatalf("LookupUser from another organization: err = %v, want not found", err)
	}

	err = db.Tx(scopedA, func(ctx context.Context) error {
		q := db.Q(ctx)
		for id, want := range map[string]bool{u.ID: true, ids.New(ids.User): false} {
			var known bool
			b := &pgx.Batch{}
			tenancy.QueueUserExists(b, id, &known)
			if err := db.SendBatch(ctx, b); err != nil || known != want {
				t.Errorf("QueueUserExists(%s) = %v, %v; want %v", id, known, err, want)
			}
		}
		var region string
		if err := q.QueryRow(ctx, `SELECT `+tenancy.AIRegionSQL).Scan(&region); err != nil || region != orgA.AIRegion {
			t.Errorf("AIRegionSQL = %q, %v; want %q", region, err, orgA.AIRegion)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if org, err := tenancy.CurrentOrg(scopedB, db.Q(scopedB)); err != nil || org.ID != orgB.ID || org.Plan != orgB.Plan {
		t.Fatalf("CurrentOrg = %+v, %v; want %+v", org, err, orgB)
	}
	var known bool
	b := &pgx.Batch{}
	tenancy.QueueUserExists(b, u.ID, &known)
	if err := db.SendBatch(scopedB, b); err != nil || known {
		t.Fatalf("QueueUserExists from another organization = %v, %v; want false", known, err)
	}
}
