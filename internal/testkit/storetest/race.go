package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DeleteDuring runs do while a deletion commits under it: sql (with args)
// runs as the schema owner in a transaction that holds its rows until a
// statement of do waits for one of them, and then commits. do has read the
// rows by then and finds them gone at its write, as when a deletion
// commits between a request's checks and its insert. It returns do's
// error.
func DeleteDuring(t testing.TB, dbURL, sql string, args []any, do func() error) error {
	t.Helper()
	ctx := context.Background()
	deleting, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer deleting.Close(ctx)
	watching, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer watching.Close(ctx)
	tx, err := deleting.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- do() }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var waiting bool
		if err := watching.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("storetest: the work finished without waiting for the deletion (%v)", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("storetest: no statement came to wait for the deletion")
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return <-done
}
