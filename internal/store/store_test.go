package store_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
)

// seed inserts an organization with two users through the tenant scope.
func seed(t testing.TB, db *store.DB, org string) {
	t.Helper()
	ctx := store.WithOrg(context.Background(), org)
	err := db.Tx(ctx, func(ctx context.Context) error {
		q := db.Q(ctx)
		if _, err := q.Exec(ctx, `INSERT INTO orgs (id, name, country, plan, ai_region) VALUES ($1, $1, 'DE', 'free', 'eu')`, org); err != nil {
			return err
		}
		for _, u := range []string{"a", "b"} {
			if _, err := q.Exec(ctx, `INSERT INTO users (id, org_id, email, name, role) VALUES ($1, $2, $3, 'n', 'student')`,
				org+"-"+u, org, u+"@example.com"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("seed %s: %v", org, err)
	}
}

func userIDs(t *testing.T, q store.Querier, ctx context.Context) []string {
	t.Helper()
	// Deliberately no org filter: row-level security must supply it.
	rows, err := q.Query(ctx, `SELECT id FROM users ORDER BY id`)
	if err != nil {
		t.Fatalf("query users: %v", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("collect: %v", err)
	}
	return ids
}

func TestQueryWithoutOrgFilterSeesOnlyItsTenant(t *testing.T) {
	db := storetest.New(t)
	seed(t, db, "org_a")
	seed(t, db, "org_b")

	ctxA := store.WithOrg(context.Background(), "org_a")
	if got := strings.Join(userIDs(t, db.Q(ctxA), ctxA), ","); got != "org_a-a,org_a-b" {
		t.Fatalf("single-statement scope saw %q, want only org_a's users", got)
	}
	err := db.Tx(ctxA, func(ctx context.Context) error {
		if got := strings.Join(userIDs(t, db.Q(ctx), ctx), ","); got != "org_a-a,org_a-b" {
			t.Errorf("transaction scope saw %q, want only org_a's users", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Unscoped connections see no tenant rows at all: RLS fails closed.
	if got := userIDs(t, db.Unscoped(), context.Background()); len(got) != 0 {
		t.Fatalf("unscoped query saw %v, want nothing", got)
	}
}

func TestWritesIntoAnotherTenantAreRefused(t *testing.T) {
	db := storetest.New(t)
	seed(t, db, "org_a")
	seed(t, db, "org_b")
	ctxA := store.WithOrg(context.Background(), "org_a")

	_, err := db.Q(ctxA).Exec(ctxA, `INSERT INTO users (id, org_id, email, name, role) VALUES ('x', 'org_b', 'x@example.com', 'x', 'student')`)
	if !errors.Is(err, store.ErrPermissionDenied) {
		t.Fatalf("insert into org_b from org_a: err = %v, want a row-level security violation (42501)", err)
	}
	tag, err := db.Q(ctxA).Exec(ctxA, `UPDATE users SET name = 'hijacked'`)
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != 2 {
		t.Fatalf("unfiltered update touched %d rows, want only org_a's 2", tag.RowsAffected())
	}
	ctxB := store.WithOrg(context.Background(), "org_b")
	var hijacked int
	if err := db.Q(ctxB).QueryRow(ctxB, `SELECT count(*) FROM users WHERE name = 'hijacked'`).Scan(&hijacked); err != nil {
		t.Fatal(err)
	}
	if hijacked != 0 {
		t.Fatalf("%d of org_b's users were changed from org_a", hijacked)
	}
}

func TestNoTenantFailsClosed(t *testing.T) {
	db := storetest.New(t)
	ctx := context.Background()
	if _, err := db.Q(ctx).Exec(ctx, `SELECT 1`); !errors.Is(err, store.ErrNoTenant) {
		t.Fatalf("Q without org: err = %v, want ErrNoTenant", err)
	}
	if err := db.Tx(ctx, func(context.Context) error { return nil }); !errors.Is(err, store.ErrNoTenant) {
		t.Fatalf("Tx without org: err = %v, want ErrNoTenant", err)
	}
}

func TestAuditLogIsAppendOnly(t *testing.T) {
	db := storetest.New(t)
	seed(t, db, "org_a")
	ctx := store.WithOrg(context.Background(), "org_a")
	q := db.Q(ctx)
	if _, err := q.Exec(ctx, `INSERT INTO audit_logs (id, org_id, action, actor_kind, actor_id, target_type, target_id, origin)
		VALUES ('aud_1', 'org_a', 'org.updated', 'system', 'cli', 'org', 'org_a', 'platform')`); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{`UPDATE audit_logs SET reason = 'rewritten'`, `DELETE FROM audit_logs`} {
		if _, err := q.Exec(ctx, sql); !errors.Is(err, store.ErrPermissionDenied) {
			t.Errorf("%s: err = %v, want permission denied (42501)", sql, err)
		}
	}
}

func TestNestedTxJoinsAndRollsBack(t *testing.T) {
	db := storetest.New(t)
	seed(t, db, "org_a")
	ctx := store.WithOrg(context.Background(), "org_a")
	boom := errors.New("boom")
	err := db.Tx(ctx, func(ctx context.Context) error {
		if _, err := db.Q(ctx).Exec(ctx, `UPDATE users SET name = 'changed'`); err != nil {
			return err
		}
		return db.Tx(ctx, func(ctx context.Context) error { return boom })
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	var changed int
	if err := db.Q(ctx).QueryRow(ctx, `SELECT count(*) FROM users WHERE name = 'changed'`).Scan(&changed); err != nil {
		t.Fatal(err)
	}
	if changed != 0 {
		t.Fatalf("%d rows changed after the outer transaction rolled back", changed)
	}
}

func TestQueryRowNoRows(t *testing.T) {
	db := storetest.New(t)
	ctx := store.WithOrg(context.Background(), "org_a")
	var id string
	if err := db.Q(ctx).QueryRow(ctx, `SELECT id FROM users WHERE id = 'missing'`).Scan(&id); !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("err = %v, want pgx.ErrNoRows", err)
	}
}

// With a single pooled connection, consecutive statements of different
// tenants share one session; each must still see only its own tenant.
func TestReusedConnectionsAreRescoped(t *testing.T) {
	url := storetest.NewURL(t)
	db, err := store.Open(context.Background(), url+"&pool_max_conns=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	seed(t, db, "org_a")
	seed(t, db, "org_b")
	ctxA := store.WithOrg(context.Background(), "org_a")
	ctxB := store.WithOrg(context.Background(), "org_b")
	for i := range 3 {
		if got := strings.Join(userIDs(t, db.Q(ctxA), ctxA), ","); got != "org_a-a,org_a-b" {
			t.Fatalf("round %d: org_a saw %q", i, got)
		}
		if got := strings.Join(userIDs(t, db.Q(ctxB), ctxB), ","); got != "org_b-a,org_b-b" {
			t.Fatalf("round %d: org_b saw %q", i, got)
		}
		if got := userIDs(t, db.Unscoped(), context.Background()); len(got) != 0 {
			t.Fatalf("round %d: unscoped saw %v after a tenant used the connection", i, got)
		}
		// A failed statement must not disturb the next one's scope.
		if _, err := db.Q(ctxB).Exec(ctxB, `SELECT 1/0`); err == nil {
			t.Fatal("division by zero succeeded")
		}
		if got := strings.Join(userIDs(t, db.Q(ctxA), ctxA), ","); got != "org_a-a,org_a-b" {
			t.Fatalf("round %d: org_a after a failed org_b statement saw %q", i, got)
		}
	}
}

// Without a pooler in front (no other direct URL), statements are prepared
// once per connection; with one, none is, as a transaction-pooling
// PgBouncer 1.18 needs. A URL that names its mode keeps it.
func TestQueryModeFollowsThePooler(t *testing.T) {
	ctx := context.Background()
	withMode := storetest.NewURL(t)
	u, err := url.Parse(withMode)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del(store.ExecModeParam)
	u.RawQuery = q.Encode()
	bare := u.String()
	for _, c := range []struct {
		name     string
		url      string
		opts     []store.Option
		prepared bool
	}{
		{"direct", bare, nil, true},
		{"same direct URL", bare, []store.Option{store.WithDirectURL(bare)}, true},
		{"behind a pooler", bare, []store.Option{store.WithDirectURL(withMode)}, false},
		{"mode in the URL", strings.Replace(withMode, "="+storetest.QueryMode(), "=exec", 1), nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, err := store.Open(ctx, c.url, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var n int
			if err := db.Unscoped().QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if got := n > 0; got != c.prepared {
				t.Fatalf("%d statements prepared on the connection; want prepared statements: %v", n, c.prepared)
			}
		})
	}
}
