package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
)

// TestTxCostsItsStatementsAndTwoRoundTrips: a transaction's BEGIN and
// tenant scope go as one batch, so a transaction costs its statements, that
// batch and the COMMIT, whichever way its statements are sent. The scope is
// a parameter, so an organization id that is not a plain token scopes
// exactly as well.
func TestTxCostsItsStatementsAndTwoRoundTrips(t *testing.T) {
	trips := &storetest.RoundTrips{}
	db := storetest.New(t, store.WithTracer(trips))
	check := func(name, orgID string, want int64, body func(ctx context.Context) (org, role string, err error)) {
		t.Helper()
		before := trips.Count()
		var org, role string
		err := db.Tx(store.WithOrg(context.Background(), orgID), func(ctx context.Context) (err error) {
			org, role, err = body(ctx)
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if name != "nothing" && (org != orgID || role != store.AppRole) {
			t.Fatalf("%s: scoped to %q as %s, want %q as %s", name, org, role, orgID, store.AppRole)
		}
		if n := trips.Count() - before; n != want {
			t.Errorf("%s: %d round trips, want %d", name, n, want)
		}
	}
	whoAmI := `SELECT app_org_id(), current_user`
	for _, orgID := range []string{"org_01PLAIN", "org_x'; SET ROLE postgres; --"} {
		check("QueryRow then Exec in "+orgID, orgID, 4, func(ctx context.Context) (org, role string, err error) {
			if err = db.Q(ctx).QueryRow(ctx, whoAmI).Scan(&org, &role); err != nil {
				return
			}
			_, err = db.Q(ctx).Exec(ctx, `SELECT 1`)
			return
		})
		check("a batch in "+orgID, orgID, 3, func(ctx context.Context) (org, role string, err error) {
			b := &pgx.Batch{}
			b.Queue(whoAmI).QueryRow(func(row pgx.Row) error { return row.Scan(&org, &role) })
			return org, role, db.SendBatch(ctx, b)
		})
		check("Exec in "+orgID, orgID, 4, func(ctx context.Context) (org, role string, err error) {
			if _, err = db.Q(ctx).Exec(ctx, `SELECT 1`); err != nil {
				return
			}
			err = db.Q(ctx).QueryRow(ctx, whoAmI).Scan(&org, &role)
			return
		})
	}
	check("nothing", "org_01PLAIN", 2, func(context.Context) (string, string, error) { return "", "", nil })
}

// TestTxRollsBackFromEveryStatement: a transaction whose first or later
// statement fails, or whose function fails after writing, leaves nothing,
// and its connection serves the next transaction normally. A failure the
// function ignores still aborts the transaction: the commit says so.
func TestTxRollsBackFromEveryStatement(t *testing.T) {
	db := storetest.New(t)
	seed(t, db, "org_a")
	ctx := store.WithOrg(context.Background(), "org_a")
	rename := `UPDATE users SET name = 'changed' WHERE id = 'org_a-a'`
	duplicate := `INSERT INTO users (id, org_id, email, name, role) VALUES ('org_a-c', 'org_a', 'a@example.com', 'n', 'student')`
	errLater := errors.New("later")
	for _, c := range []struct {
		name string
		fn   func(ctx context.Context) error
		want error
	}{
		{"the first statement fails", func(ctx context.Context) error {
			_, err := db.Q(ctx).Exec(ctx, duplicate)
			return err
		}, store.ErrUniqueViolation},
		{"a later statement fails", func(ctx context.Context) error {
			if _, err := db.Q(ctx).Exec(ctx, rename); err != nil {
				return err
			}
			_, err := db.Q(ctx).Exec(ctx, duplicate)
			return err
		}, store.ErrUniqueViolation},
		{"the function fails", func(ctx context.Context) error {
			if _, err := db.Q(ctx).Exec(ctx, rename); err != nil {
				return err
			}
			return errLater
		}, errLater},
		{"a statement sent at commit fails", func(ctx context.Context) error {
			if _, err := db.Q(ctx).Exec(ctx, rename); err != nil {
				return err
			}
			b := &pgx.Batch{}
			b.Queue(duplicate)
			return db.SendAtCommit(ctx, b)
		}, store.ErrUniqueViolation},
		{"a failure is ignored", func(ctx context.Context) error {
			_, _ = db.Q(ctx).Exec(ctx, rename)
			_, _ = db.Q(ctx).Exec(ctx, duplicate)
			return nil
		}, pgx.ErrTxCommitRollback},
	} {
		if err := db.Tx(ctx, c.fn); !errors.Is(err, c.want) {
			t.Fatalf("%s: err = %v, want %v", c.name, err, c.want)
		}
		var name string
		if err := db.Q(ctx).QueryRow(ctx, `SELECT name FROM users WHERE id = 'org_a-a'`).Scan(&name); err != nil || name == "changed" {
			t.Fatalf("%s: the name is %q (%v) afterwards: the transaction was not rolled back", c.name, name, err)
		}
	}
}

// TestSendAtCommitGoesWithTheCommit: statements queued for the commit
// travel in the COMMIT's round trip, in the transaction's scope, and their
// callbacks have run when Tx returns; a transaction of nothing else is one
// round trip. Outside a transaction they are sent at once.
func TestSendAtCommitGoesWithTheCommit(t *testing.T) {
	trips := &storetest.RoundTrips{}
	db := storetest.New(t, store.WithTracer(trips))
	ctx := store.WithOrg(context.Background(), "org_01PLAIN")
	whoAmI := `SELECT app_org_id(), current_user`
	for _, c := range []struct {
		name    string
		first   bool // a statement before the queued one
		inTx    bool
		wantRTs int64
	}{{"after a statement", true, true, 3}, {"alone", false, true, 2}, {"outside a transaction", false, false, 1}} {
		before := trips.Count()
		var org, role string
		var err error
		body := func(ctx context.Context) error {
			if c.first {
				if _, err := db.Q(ctx).Exec(ctx, `SELECT 1`); err != nil {
					return err
				}
			}
			b := &pgx.Batch{}
			b.Queue(whoAmI).QueryRow(func(row pgx.Row) error { return row.Scan(&org, &role) })
			if err := db.SendAtCommit(ctx, b); err != nil {
				return err
			}
			if c.inTx && org != "" {
				t.Errorf("%s: the queued statement ran before the commit", c.name)
			}
			return nil
		}
		if c.inTx {
			err = db.Tx(ctx, body)
		} else {
			err = body(ctx)
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if org != "org_01PLAIN" || role != store.AppRole {
			t.Errorf("%s: ran as %q, %q; want the organization's scope", c.name, org, role)
		}
		if n := trips.Count() - before; n != c.wantRTs {
			t.Errorf("%s: %d round trips, want %d", c.name, n, c.wantRTs)
		}
	}
}

// TestNoStatementBesideItsTransaction: inside a transaction, a statement
// that would take a connection of its own is refused at once, rather than
// waiting for a connection that concurrent transactions of the same kind
// all hold.
func TestNoStatementBesideItsTransaction(t *testing.T) {
	db := storetest.New(t)
	err := db.Tx(store.WithOrg(context.Background(), "org_1"), func(ctx context.Context) error {
		var one int
		return db.Unscoped().QueryRow(ctx, `SELECT 1`).Scan(&one)
	})
	if !errors.Is(err, store.ErrBesideTx) {
		t.Fatalf("Unscoped inside Tx: %v, want ErrBesideTx", err)
	}
	var one int
	if err := db.Unscoped().QueryRow(context.Background(), `SELECT 1`).Scan(&one); err != nil || one != 1 {
		t.Fatalf("Unscoped outside a transaction: %d, %v", one, err)
	}
}

// TestACommitNoteCommitsWithTheWrites: a context's commit note runs last in
// each of its transactions, whichever way it is sent, in the round trips
// the transaction costs anyway; it commits with a transaction's writes and
// rolls back with them. This note appends a mark to a user's name when its
// transaction wrote, so a note sent before the write, or in a transaction
// that only read, leaves no mark.
func TestACommitNoteCommitsWithTheWrites(t *testing.T) {
	trips := &storetest.RoundTrips{}
	db := storetest.New(t, store.WithTracer(trips))
	seed(t, db, "org_a")
	plain := store.WithOrg(context.Background(), "org_a")
	ctx := store.WithCommitNote(plain, `UPDATE users SET name = name || '+' WHERE id = $1 AND pg_current_xact_id_if_assigned() IS NOT NULL`, "org_a-b")
	rename := `UPDATE users SET name = 'renamed' WHERE id = 'org_a-a'`
	read := `SELECT count(*) FROM users`
	errLater := errors.New("later")
	for _, c := range []struct {
		name     string
		run      func() error
		wantMark bool
		wantRTs  int64
	}{
		{"a transaction that writes", func() error {
			return db.Tx(ctx, func(ctx context.Context) error {
				_, err := db.Q(ctx).Exec(ctx, rename)
				return err
			})
		}, true, 3},
		{"a transaction that writes and fails", func() error {
			err := db.Tx(ctx, func(ctx context.Context) error {
				if _, err := db.Q(ctx).Exec(ctx, rename); err != nil {
					return err
				}
				return errLater
			})
			if errors.Is(err, errLater) {
				return nil
			}
			return err
		}, false, 3},
		{"a transaction that reads", func() error {
			return db.Tx(ctx, func(ctx context.Context) error {
				_, err := db.Q(ctx).Exec(ctx, read)
				return err
			})
		}, false, 3},
		{"a batch that writes", func() error {
			b := &pgx.Batch{}
			b.Queue(rename)
			return db.SendBatch(ctx, b)
		}, true, 1},
		{"a statement that writes", func() error {
			_, err := db.Q(ctx).Exec(ctx, rename)
			return err
		}, true, 1},
		{"a statement that reads", func() error {
			var n int
			return db.Q(ctx).QueryRow(ctx, read).Scan(&n)
		}, false, 1},
	} {
		var before string
		if err := db.Q(plain).QueryRow(plain, `SELECT name FROM users WHERE id = 'org_a-b'`).Scan(&before); err != nil {
			t.Fatal(err)
		}
		trips0 := trips.Count()
		if err := c.run(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if n := trips.Count() - trips0; n != c.wantRTs {
			t.Errorf("%s: %d round trips, want %d", c.name, n, c.wantRTs)
		}
		var after string
		if err := db.Q(plain).QueryRow(plain, `SELECT name FROM users WHERE id = 'org_a-b'`).Scan(&after); err != nil {
			t.Fatal(err)
		}
		if marked := after == before+"+"; marked != c.wantMark || (!marked && after != before) {
			t.Errorf("%s: the name went from %q to %q; want a mark: %v", c.name, before, after, c.wantMark)
		}
	}

	failing := store.WithCommitNote(context.Background(), `SELECT 1/0`)
	var one int
	if err := db.Unscoped().QueryRow(failing, `SELECT 1`).Scan(&one); err != nil || one != 1 {
		t.Fatalf("a statement of Unscoped ran the note: %d, %v", one, err)
	}
}
