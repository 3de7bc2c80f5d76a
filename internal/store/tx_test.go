package store_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
)

// statements counts the statements the pool sends, one per round trip.
type statements struct{ n atomic.Int64 }

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	s.n.Add(1)
	return ctx
}

func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestTxBeginsScopedInOneRoundTrip: a transaction's BEGIN carries its
// tenant scope (BEGIN, one statement, COMMIT: three round trips), and an
// organization that is not a plain id, which cannot be written into SQL as
// it is, is scoped by a parameter instead, exactly.
func TestTxBeginsScopedInOneRoundTrip(t *testing.T) {
	trips := &statements{}
	db, err := store.Open(context.Background(), storetest.NewURL(t), store.WithTracer(trips))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, c := range []struct {
		org  string
		want int64
	}{{"org_01PLAIN", 3}, {"org_x'; SET ROLE postgres; --", 4}} {
		ctx := store.WithOrg(context.Background(), c.org)
		before := trips.n.Load()
		var org, role string
		err := db.Tx(ctx, func(ctx context.Context) error {
			return db.Q(ctx).QueryRow(ctx, `SELECT app_org_id(), current_user`).Scan(&org, &role)
		})
		if err != nil {
			t.Fatalf("%q: %v", c.org, err)
		}
		if org != c.org || role != store.AppRole {
			t.Fatalf("scoped to %q as %s, want %q as %s", org, role, c.org, store.AppRole)
		}
		if n := trips.n.Load() - before; n != c.want {
			t.Errorf("%q: %d round trips, want %d", c.org, n, c.want)
		}
	}
}
