package store

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrate applies every pending migration to the database at url. It must
// connect as the schema owner (not AppRole); concurrent runs serialize on
// tern's advisory lock.
func Migrate(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("migrate: connect: %w", err)
	}
	defer conn.Close(ctx)
	m, err := migrator(ctx, conn)
	if err != nil {
		return err
	}
	if err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// MigrateTo applies the migrations up to version to the database at url:
// tests of a migration use it to hold the data an earlier schema held.
func MigrateTo(ctx context.Context, url string, version int32) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("migrate: connect: %w", err)
	}
	defer conn.Close(ctx)
	m, err := migrator(ctx, conn)
	if err != nil {
		return err
	}
	if err := m.MigrateTo(ctx, version); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// migrator returns the migrator of assessd's schema on conn.
func migrator(ctx context.Context, conn *pgx.Conn) (*migrate.Migrator, error) {
	m, err := migrate.NewMigrator(ctx, conn, "schema_version")
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	if err := m.LoadMigrations(sub); err != nil {
		return nil, fmt.Errorf("migrate: load: %w", err)
	}
	return m, nil
}

// MigrationsHash names the schema the migrations build: it changes when any
// migration is added or edited. Tests key their template database by it.
func MigrationsHash() string {
	h := sha256.New()
	_ = fs.WalkDir(migrations, "migrations", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := migrations.ReadFile(path)
		if err != nil {
			return err
		}
		// A hash.Hash never fails to write.
		_, _ = fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		_, _ = h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:16]
}
