package storetest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/store"
)

// TestDatabasesAreCopiesOfOneMigratedTemplate: a new database holds every
// migration, and a second one is copied from the same template, not built
// again.
func TestDatabasesAreCopiesOfOneMigratedTemplate(t *testing.T) {
	ctx := context.Background()
	latest := schemaVersion(t, NewEmptyURL(t), true)
	if got := schemaVersion(t, NewURL(t), false); got != latest {
		t.Fatalf("copied database at schema version %d, want %d", got, latest)
	}
	conn, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	oid := func() (id uint32) {
		t.Helper()
		if err := conn.QueryRow(ctx, "SELECT oid FROM pg_database WHERE datname = $1", "assessd_template_"+store.MigrationsHash()).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	before := oid()
	NewURL(t)
	if after := oid(); after != before {
		t.Fatalf("template rebuilt: oid %d, then %d", before, after)
	}
}

// schemaVersion returns the schema version of the database at dbURL,
// migrating it first if migrate.
func schemaVersion(t *testing.T, dbURL string, migrate bool) (version int32) {
	t.Helper()
	ctx := context.Background()
	if migrate {
		if err := store.Migrate(ctx, dbURL); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, "SELECT version FROM schema_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	return version
}
