package apihttp

import (
	"context"
	"errors"
	"testing"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
)

// TestUnhandledDatabaseRefusalsAnswerWhatTheyMean: a constraint violation
// or a deadlock that no site translated answers what it means for the
// client (decision 0177), never 500 INTERNAL; a site's own answer still
// wins, and a refusal of row-level security stays internal.
func TestUnhandledDatabaseRefusalsAnswerWhatTheyMean(t *testing.T) {
	db := storetest.New(t)
	ctx := store.WithOrg(context.Background(), "org_a")
	exec := func(sql string, args ...any) error {
		_, err := db.Q(ctx).Exec(ctx, sql, args...)
		return err
	}
	if err := exec(`INSERT INTO orgs (id, name, country, plan, ai_region) VALUES ('org_a', 'A', 'DE', 'free', 'eu')`); err != nil {
		t.Fatal(err)
	}
	user := `INSERT INTO users (id, org_id, email, name, role) VALUES ($1, 'org_a', $2, 'n', $3)`
	for _, id := range []string{"usr_1", "usr_2"} {
		if err := exec(user, id, id+"@example.com", "student"); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name   string
		err    error
		code   connect.Code
		reason string
	}{
		{"foreign key", exec(`INSERT INTO api_keys (id, org_id, user_id, name, secret_hash) VALUES ('key_1', 'org_a', 'usr_gone', 'k', 'x')`),
			connect.CodeAlreadyExists, "REFERENCE_GONE"},
		{"unique", exec(user, "usr_3", "USR_1@example.com", "student"), connect.CodeAlreadyExists, "ALREADY_EXISTS"},
		{"check", exec(user, "usr_4", "d@example.com", "janitor"), connect.CodeInvalidArgument, "VALUE_NOT_STORABLE"},
		{"not null", exec(user, "usr_5", nil, "student"), connect.CodeInvalidArgument, "VALUE_NOT_STORABLE"},
		{"deadlock", deadlock(t, db, ctx), connect.CodeAlreadyExists, "CONCURRENT_UPDATE"},
	}
	for _, c := range cases {
		got := ToConnect(ctx, c.err)
		if got.Code() != c.code || reasonOf(got) != c.reason {
			t.Errorf("%s (%v): %v %q, want %v %q", c.name, c.err, got.Code(), reasonOf(got), c.code, c.reason)
		}
	}

	var pg *pgconn.PgError
	if dl := cases[len(cases)-1].err; !errors.As(dl, &pg) || pg.Code != "40P01" {
		t.Errorf("the deadlock's driver error is not reachable for RetryDeadlock: %v", dl)
	}
	calls := 0
	if err := store.RetryDeadlock(func() error {
		if calls++; calls == 1 {
			return cases[len(cases)-1].err
		}
		return nil
	}); err != nil || calls != 2 {
		t.Errorf("RetryDeadlock ran a translated deadlock %d times: %v", calls, err)
	}

	// Row-level security refusing a write (a row of another organization)
	// is a fault of the code, not the client's to fix: an opaque 500.
	rls := exec(`INSERT INTO users (id, org_id, email, name, role) VALUES ('usr_6', 'org_b', 'e@example.com', 'n', 'student')`)
	if !errors.Is(rls, store.ErrPermissionDenied) {
		t.Fatalf("a row of another organization: %v, want a permission refusal", rls)
	}
	if got := ToConnect(ctx, rls); got.Code() != connect.CodeInternal {
		t.Errorf("a row-level security refusal answers %v, want internal", got.Code())
	}
}

// deadlock makes two transactions lock two users in opposite orders and
// returns the error of the one PostgreSQL aborts.
func deadlock(t *testing.T, db *store.DB, ctx context.Context) error {
	t.Helper()
	locked := make(chan struct{}, 2)
	lockBoth := func(first, second string) error {
		return db.Tx(ctx, func(ctx context.Context) error {
			q := db.Q(ctx)
			if _, err := q.Exec(ctx, `UPDATE users SET name = 'x' WHERE id = $1`, first); err != nil {
				return err
			}
			locked <- struct{}{}
			for len(locked) < 2 {
				// Wait until the other transaction holds its first row.
				if _, err := q.Exec(ctx, `SELECT pg_sleep(0.01)`); err != nil {
					return err
				}
			}
			_, err := q.Exec(ctx, `UPDATE users SET name = 'y' WHERE id = $1`, second)
			return err
		})
	}
	errc := make(chan error, 1)
	go func() { errc <- lockBoth("usr_2", "usr_1") }()
	err := lockBoth("usr_1", "usr_2")
	if other := <-errc; other != nil {
		if err != nil {
			t.Fatalf("both transactions failed: %v; %v", err, other)
		}
		err = other
	}
	if err == nil {
		t.Fatal("no deadlock")
	}
	return err
}
