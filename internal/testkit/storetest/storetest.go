// Package storetest gives tests and benchmarks migrated PostgreSQL
// databases of their own on the server named by TEST_DATABASE_URL
// (default: the local server, user postgres): a test's is a reused slot,
// emptied (slots.go), a benchmark's a copy of the template (template.go).
//
// Their URLs ask pgx for the exec query mode (ExecMode), the one a
// transaction-pooling PgBouncer supports, so every test proves that each
// query's parameters encode without named prepared statements;
// TEST_QUERY_EXEC_MODE selects another (make test runs the packages that
// own SQL again in cache_statement, the mode of direct deployments).
package storetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/assessd/assessd/internal/store"
)

// DefaultURL is used when TEST_DATABASE_URL is not set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// ServerURL is the URL of the PostgreSQL server test databases live on.
func ServerURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// ExecMode is the pgx query mode test database URLs select unless
// TEST_QUERY_EXEC_MODE names another.
const ExecMode = "exec"

// QueryMode is the pgx query mode test database URLs select.
func QueryMode() string {
	if m := os.Getenv("TEST_QUERY_EXEC_MODE"); m != "" {
		return m
	}
	return ExecMode
}

// Create makes a migrated database named prefix_<host>_<pid>_<random> and
// returns its URL (as the schema owner, in QueryMode) and a function that
// drops it. It is a copy of the template database of the current
// migrations (template.go). The first database a process makes drops those
// that dead processes of the same host left behind. prefix starts with
// assessd_.
func Create(ctx context.Context, prefix string) (dbURL string, drop func() error, err error) {
	return create(ctx, prefix, true)
}

// CreateEmpty is Create without the migrations: for tests of a migration
// on the data an earlier schema holds.
func CreateEmpty(ctx context.Context, prefix string) (dbURL string, drop func() error, err error) {
	return create(ctx, prefix, false)
}

func create(ctx context.Context, prefix string, migrated bool) (dbURL string, drop func() error, err error) {
	admin := ServerURL()
	name := ownedName(prefix, randomSuffix())
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", nil, fmt.Errorf("storetest: connect %s: %w", admin, err)
	}
	defer conn.Close(ctx)
	orphansDropped.Do(func() { _, _ = dropOrphans(ctx, conn) })
	if err := createDatabase(ctx, conn, name, migrated); err != nil {
		return "", nil, fmt.Errorf("storetest: create database: %w", err)
	}
	drop = func() error {
		conn, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		_, err = conn.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)")
		return err
	}
	return databaseURL(admin, name), drop, nil
}

// createDatabase creates the database name, a copy of the template if
// migrated, building the template again should it be gone.
func createDatabase(ctx context.Context, conn *pgx.Conn, name string, migrated bool) error {
	if !migrated {
		_, err := conn.Exec(ctx, "CREATE DATABASE "+name)
		return err
	}
	for rebuild := false; ; rebuild = true {
		template, err := templateName(ctx, conn, rebuild)
		if err != nil {
			return err
		}
		_, err = conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+template)
		var pgErr *pgconn.PgError
		if rebuild || !errors.As(err, &pgErr) || pgErr.Code != "3D000" { // invalid_catalog_name
			return err
		}
	}
}

// NewURL returns the URL of a migrated database for t alone, empty but
// for the schema version: a slot (slots.go), freed when t ends, or, when
// every slot is taken, a database of t's own, dropped when t ends.
func NewURL(t testing.TB) string {
	t.Helper()
	return newURL(t, func(ctx context.Context, prefix string) (string, func() error, error) {
		dbURL, release, ok, err := claimSlot(ctx)
		if ok || err != nil {
			return dbURL, release, err
		}
		return Create(ctx, prefix)
	})
}

// NewEmptyURL creates a database without the schema for t, dropped when t
// ends.
func NewEmptyURL(t testing.TB) string {
	t.Helper()
	return newURL(t, CreateEmpty)
}

func newURL(t testing.TB, create func(context.Context, string) (string, func() error, error)) string {
	t.Helper()
	dbURL, drop, err := create(context.Background(), "assessd_test")
	if drop != nil {
		t.Cleanup(func() {
			if err := drop(); err != nil {
				t.Errorf("storetest: free the database: %v", err)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return dbURL
}

// New returns a DB opened with opts on a fresh migrated database, closed
// when t ends.
func New(t testing.TB, opts ...store.Option) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), NewURL(t), opts...)
	if err != nil {
		t.Fatalf("storetest: open: %v", err)
	}
	t.Cleanup(db.Close)
	return db
}
