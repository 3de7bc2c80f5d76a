package store_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
)

// TestCountLockedHoldsABound: creators that count under one lock before
// inserting never pass the bound, however they interleave. Each waits
// between its count and its insert, the window a bound without the lock
// loses to.
func TestCountLockedHoldsABound(t *testing.T) {
	const bound, creators = 3, 8
	url := storetest.NewURL(t)
	ctx := context.Background()
	owner, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close(ctx)
	if _, err := owner.Exec(ctx, `CREATE TABLE bounded (org_id text NOT NULL);
		GRANT SELECT, INSERT ON bounded TO `+store.AppRole); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	octx := store.WithOrg(ctx, "org_01BOUND")
	var wg sync.WaitGroup
	for range creators {
		wg.Go(func() {
			err := db.Tx(octx, func(ctx context.Context) error {
				q := db.Q(ctx)
				n, err := db.CountLocked(ctx, "bounded:org_01BOUND", `SELECT count(*) FROM bounded WHERE org_id = app_org_id()`)
				if err != nil || n >= bound {
					return err
				}
				if _, err := q.Exec(ctx, `SELECT pg_sleep(0.02)`); err != nil {
					return err
				}
				_, err = q.Exec(ctx, `INSERT INTO bounded VALUES (app_org_id())`)
				return err
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	var n int
	if err := owner.QueryRow(ctx, `SELECT count(*) FROM bounded`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != bound {
		t.Fatalf("%d creators under a bound of %d inserted %d rows", creators, bound, n)
	}
}
