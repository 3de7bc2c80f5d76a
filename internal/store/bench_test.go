package store_test

import (
	"context"
	"testing"

	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
)

// BenchmarkTx measures a transaction of one statement against the same
// statement on its own (one scoped round trip): what a transaction adds.
func BenchmarkTx(b *testing.B) {
	db := storetest.New(b)
	seed(b, db, "org_a")
	ctx := store.WithOrg(context.Background(), "org_a")
	read := func(ctx context.Context) error {
		var name string
		return db.Q(ctx).QueryRow(ctx, `SELECT name FROM users WHERE org_id = app_org_id() AND id = 'org_a-a'`).Scan(&name)
	}
	b.Run("statement", func(b *testing.B) {
		for b.Loop() {
			if err := read(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tx", func(b *testing.B) {
		for b.Loop() {
			if err := db.Tx(ctx, read); err != nil {
				b.Fatal(err)
			}
		}
	})
}
