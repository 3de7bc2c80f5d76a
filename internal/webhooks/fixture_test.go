package webhooks_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/assessd/assessd/internal/platform/egress"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/internal/webhooks"
	"github.com/assessd/assessd/tenancy"
)

// fixture is an organization on a fresh database, with the endpoints
// service allowing loopback receivers.
type fixture struct {
	url   string
	db    *store.DB
	owner *pgxpool.Pool // the schema's owner, outside row-level security
	ctx   context.Context
	hooks *webhooks.Service
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	f := fixture{url: storetest.NewURL(t)}
	bg := context.Background()
	var err error
	if f.db, err = store.Open(bg, f.url); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.db.Close)
	if f.owner, err = pgxpool.New(bg, f.url); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.owner.Close)
	org, err := tenancy.NewService(f.db).CreateOrg(bg, tenancy.NewOrg{Name: "School", Country: "DE"})
	if err != nil {
		t.Fatal(err)
	}
	f.ctx = tenancy.WithCaller(bg, tenancy.SystemCaller(org.ID))
	f.hooks = webhooks.NewService(f.db, egress.Targets{AllowPrivate: true})
	return f
}
