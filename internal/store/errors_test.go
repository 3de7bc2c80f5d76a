package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
)

// TestConstraintErrorsAreTranslated shows that every way of running SQL
// (single statements, transactions, rows and rows of one) reports
// constraint errors as the store's sentinels with the constraint's name,
// while the driver's error stays reachable for logs.
func TestConstraintErrorsAreTranslated(t *testing.T) {
	db := storetest.New(t)
	seed(t, db, "org_a")
	ctx := store.WithOrg(context.Background(), "org_a")
	user := `INSERT INTO users (id, org_id, email, name, role) VALUES ($1, $2, $3, 'n', $4) RETURNING id`
	key := `INSERT INTO api_keys (id, org_id, user_id, name, secret_hash) VALUES ($1, $2, $3, 'k', 'x') RETURNING id`
	cases := []struct {
		name       string
		sql        string
		args       []any
		want       error
		constraint string
	}{
		{"unique", user, []any{"u1", "org_a", "A@example.com", "student"}, store.ErrUniqueViolation, "users_org_email"},
		{"foreign key", key, []any{"k1", "org_a", "nobody"}, store.ErrForeignKeyViolation, "api_keys_user_id_fkey"},
		{"check", user, []any{"u3", "org_a", "c@example.com", "janitor"}, store.ErrCheckViolation, "users_role_check"},
		{"not null", user, []any{"u4", "org_a", nil, "student"}, store.ErrNotNullViolation, ""},
	}
	check := func(t *testing.T, how string, err error, want error, constraint string) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Fatalf("%s: err = %v, want %v", how, err, want)
		}
		var ce *store.ConstraintError
		if !errors.As(err, &ce) || ce.Constraint != constraint {
			t.Errorf("%s: constraint = %+v, want %q", how, ce, constraint)
		}
		var pg *pgconn.PgError
		if !errors.As(err, &pg) {
			t.Errorf("%s: the driver's error is not reachable from %v", how, err)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := db.Q(ctx)
			_, err := q.Exec(ctx, c.sql, c.args...)
			check(t, "Exec", err, c.want, c.constraint)
			var id string
			check(t, "QueryRow", q.QueryRow(ctx, c.sql, c.args...).Scan(&id), c.want, c.constraint)
			rows, err := q.Query(ctx, c.sql, c.args...)
			if err == nil {
				for rows.Next() {
				}
				rows.Close()
				err = rows.Err()
			}
			check(t, "Query", err, c.want, c.constraint)
			err = db.Tx(ctx, func(ctx context.Context) error {
				_, err := db.Q(ctx).Exec(ctx, c.sql, c.args...)
				check(t, "Exec in Tx", err, c.want, c.constraint)
				return err
			})
			check(t, "Tx", err, c.want, c.constraint)
		})
	}
}

func TestRetryDeadlock(t *testing.T) {
	for _, c := range []struct {
		name      string
		failures  int
		err       error
		wantCalls int
		wantErr   bool
	}{
		{"succeeds at once", 0, nil, 1, false},
		{"a deadlock victim runs again", 1, &pgconn.PgError{Code: "40P01"}, 2, false},
		{"a lock order to fix", 5, &pgconn.PgError{Code: "40P01"}, 3, true},
		{"another error is not retried", 5, &pgconn.PgError{Code: "23505"}, 1, true},
		{"a wrapped deadlock too", 1, fmt.Errorf("correct answer: %w", &pgconn.PgError{Code: "40P01"}), 2, false},
	} {
		calls := 0
		err := store.RetryDeadlock(func() error {
			calls++
			if calls <= c.failures {
				return c.err
			}
			return nil
		})
		if calls != c.wantCalls || (err != nil) != c.wantErr {
			t.Errorf("%s: %d calls, %v", c.name, calls, err)
		}
	}
}
