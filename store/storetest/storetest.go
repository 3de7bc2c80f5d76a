// Package storetest gives each test its own freshly migrated PostgreSQL
// database on the server named by TEST_DATABASE_URL (default: the local
// server, user postgres), dropped when the test ends.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/store"
)

// DefaultURL is used when TEST_DATABASE_URL is not set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// NewURL creates a migrated database and returns its URL (as the schema
// owner, as `assessd migrate` would use it).
func NewURL(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	admin := os.Getenv("TEST_DATABASE_URL")
	if admin == "" {
		admin = DefaultURL
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "assessd_test_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("storetest: connect %s: %v", admin, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("storetest: create database: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			t.Errorf("storetest: connect for cleanup: %v", err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("storetest: drop database: %v", err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("storetest: parse url: %v", err)
	}
	u.Path = "/" + name
	dbURL := u.String()
	if err := store.Migrate(ctx, dbURL); err != nil {
		t.Fatalf("storetest: migrate: %v", err)
	}
	return dbURL
}

// New returns a DB on a fresh migrated database, closed when the test ends.
func New(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), NewURL(t))
	if err != nil {
		t.Fatalf("storetest: open: %v", err)
	}
	t.Cleanup(db.Close)
	return db
}
