package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// commitNote is a statement that every transaction of a context sends last,
// with its COMMIT, so that what it records commits with the transaction's
// writes and only with them.
type commitNote struct {
	sql  string
	args []any
}

type commitNoteKey struct{}

// WithCommitNote returns a context every transaction of which in its
// organization (Tx, SendBatch, and each statement of Q outside a
// transaction) also runs sql with args, last before it commits, in the
// same round trip. The idempotency keys use it to record that a request
// changed data, atomically with the change (decision 0179). It runs in
// transactions that only read too, so sql should tell the two apart itself:
// pg_current_xact_id_if_assigned() is NULL until a transaction writes.
// Statements of Unscoped run without it.
func WithCommitNote(ctx context.Context, sql string, args ...any) context.Context {
	return context.WithValue(ctx, commitNoteKey{}, &commitNote{sql: sql, args: args})
}

// queueCommitNote queues ctx's commit note, if it has one, on b.
func queueCommitNote(ctx context.Context, b *pgx.Batch) {
	if n, ok := ctx.Value(commitNoteKey{}).(*commitNote); ok {
		b.Queue(n.sql, n.args...)
	}
}
