package classes_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/classes"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// fixture is a fresh database with two organizations, each with a user of
// every role and a second teacher.
type fixture struct {
	db      *store.DB
	owner   *pgxpool.Pool // the schema's owner, outside row-level security
	classes *classes.Service
	orgs    [2]org
}

// org is one organization: its users and a context acting as each.
type org struct {
	id      string
	users   map[string]tenancy.User // by role name; "teacher2" is the second teacher
	callers map[string]context.Context
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	url := storetest.NewURL(t)
	bg := context.Background()
	f := &fixture{}
	var err error
	if f.db, err = store.Open(bg, url); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.db.Close)
	if f.owner, err = pgxpool.New(bg, url); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.owner.Close)
	ten := tenancy.NewService(f.db)
	f.classes = classes.NewService(f.db)
	for i, country := range []string{"DE", "FR"} {
		o, err := ten.CreateOrg(bg, tenancy.NewOrg{Name: "School " + country, Country: country})
		if err != nil {
			t.Fatal(err)
		}
		sys := tenancy.WithCaller(bg, tenancy.SystemCaller(o.ID))
		f.orgs[i] = org{id: o.ID, users: map[string]tenancy.User{}, callers: map[string]context.Context{}}
		for _, name := range []string{"owner", "admin", "teacher", "teacher2", "student"} {
			role := tenancy.Role(name)
			if name == "teacher2" {
				role = tenancy.RoleTeacher
			}
			u, err := ten.CreateUser(sys, tenancy.NewUser{Email: name + "@" + o.ID + ".test", Name: "The " + name, Role: role})
			if err != nil {
				t.Fatal(err)
			}
			f.orgs[i].users[name] = u
			f.orgs[i].callers[name] = as(u, tenancy.APIKeyScopes(role))
		}
	}
	return f
}

// as is a context acting as user u with scopes.
func as(u tenancy.User, scopes []tenancy.Scope) context.Context {
	return tenancy.WithCaller(context.Background(), &tenancy.Caller{Kind: tenancy.KindAPIKey, OrgID: u.OrgID, UserID: u.ID,
		CredentialID: "key_test", Role: u.Role, Scopes: scopes})
}

// ctx is the context of the user named name in the first organization.
func (f *fixture) ctx(name string) context.Context { return f.orgs[0].callers[name] }

// user is the user named name in the first organization.
func (f *fixture) user(name string) tenancy.User { return f.orgs[0].users[name] }

func (f *fixture) create(t *testing.T, ctx context.Context, in classes.NewClass) classes.Class {
	t.Helper()
	c, err := f.classes.Create(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fixture) add(t *testing.T, ctx context.Context, classID, userID string, role classes.Role) classes.Member {
	t.Helper()
	m, err := f.classes.AddMember(ctx, classID, classes.NewMember{UserID: userID, Role: role})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// auditEntries returns the first organization's entries
// about target, oldest first.
func (f *fixture) auditEntries(t *testing.T, target string) []audit.Entry {
	t.Helper()
	ctx := f.ctx("owner")
	entries, _, err := audit.List(ctx, f.db.Q(ctx), audit.Filter{TargetID: target}, paging.Page{Size: paging.MaxSize})
	if err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(entries)-1; i < j; i, j = i+1, j-1 {
		entries[i], entries[j] = entries[j], entries[i]
	}
	return entries
}

// wantErr fails unless err is a domain error of kind and reason.
func wantErr(t *testing.T, what string, err error, kind errs.Kind, reason string) {
	t.Helper()
	e, ok := errs.As(err)
	if !ok || e.Kind != kind || e.Reason != reason {
		t.Fatalf("%s: %v, want %s", what, err, reason)
	}
}

// wantField fails unless err is a 400 naming field.
func wantField(t *testing.T, what string, err error, field string) {
	t.Helper()
	e, ok := errs.As(err)
	if !ok || e.Kind != errs.KindInvalid || e.Field != field {
		t.Fatalf("%s: %v, want a 400 naming %s", what, err, field)
	}
}
