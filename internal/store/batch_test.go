package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
)

// TestSendBatchIsOneScopedTransaction: outside a transaction a batch runs in
// the context's tenant scope, all or nothing, and reports constraint errors
// as the store's sentinels; without a tenant it fails closed.
func TestSendBatchIsOneScopedTransaction(t *testing.T) {
	db := storetest.New(t)
	seed(t, db, "org_a")
	seed(t, db, "org_b")
	ctx := store.WithOrg(context.Background(), "org_a")

	var seen []string
	b := &pgx.Batch{}
	b.Queue(`SELECT id FROM users ORDER BY id`).Query(func(rows pgx.Rows) (err error) {
		seen, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err := db.SendBatch(ctx, b); err != nil || len(seen) != 2 || seen[0] != "org_a-a" {
		t.Fatalf("scoped read = %v, %v; want org_a's two users", seen, err)
	}

	b = &pgx.Batch{}
	b.Queue(`UPDATE users SET name = 'changed' WHERE id = 'org_a-a'`)
	b.Queue(`INSERT INTO users (id, org_id, email, name, role) VALUES ('org_a-c', 'org_a', 'a@example.com', 'n', 'student')`)
	if err := db.SendBatch(ctx, b); !errors.Is(err, store.ErrUniqueViolation) {
		t.Fatalf("duplicate email in a batch: err = %v, want ErrUniqueViolation", err)
	}
	var name string
	if err := db.Q(ctx).QueryRow(ctx, `SELECT name FROM users WHERE id = 'org_a-a'`).Scan(&name); err != nil || name == "changed" {
		t.Fatalf("after the failed batch the name is %q (%v): its first statement was not rolled back", name, err)
	}

	if err := db.SendBatch(context.Background(), &pgx.Batch{}); !errors.Is(err, store.ErrNoTenant) {
		t.Fatalf("batch without a tenant: err = %v, want ErrNoTenant", err)
	}
}
