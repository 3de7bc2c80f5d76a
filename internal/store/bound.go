package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// CountLocked takes the transaction-scoped advisory lock named key, then
// counts with countSQL (a SELECT count(*)), in one round trip. Every
// creator of rows under one bound takes the same lock first, so creations
// serialize, and the count, a statement of its own under READ COMMITTED
// (its snapshot taken once the lock is held), sees each creation that held
// the lock before. It runs only inside Tx: outside one the lock would end
// with its statement.
func (db *DB) CountLocked(ctx context.Context, key, countSQL string, args ...any) (int, error) {
	if !InTx(ctx) {
		return 0, fmt.Errorf("count under %s: outside a transaction", key)
	}
	var n int
	b := &pgx.Batch{}
	b.Queue(`SELECT pg_advisory_xact_lock(hashtext($1))`, key)
	b.Queue(countSQL, args...).QueryRow(func(row pgx.Row) error { return row.Scan(&n) })
	if err := db.SendBatch(ctx, b); err != nil {
		return 0, fmt.Errorf("count under %s: %w", key, err)
	}
	return n, nil
}
