package storetest

import (
	"context"
	"testing"
	"time"

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

// TestTemplatesOfOtherMigrationsAreKeptAWeek: a template of other
// migrations (another checkout's) stays while it is recent, and goes once
// staleAfter has passed since it was built, or when it says nothing of
// when it was built.
func TestTemplatesOfOtherMigrationsAreKeptAWeek(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	built := map[string]string{
		"assessd_template_testrecent":  time.Now().Add(-time.Hour).UTC().Format(time.RFC3339),
		"assessd_template_teststale":   time.Now().Add(-staleAfter - time.Hour).UTC().Format(time.RFC3339),
		"assessd_template_testundated": "",
	}
	for name, at := range built {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name) })
		if at != "" {
			if _, err := conn.Exec(ctx, "COMMENT ON DATABASE "+name+" IS '"+at+"'"); err != nil {
				t.Fatal(err)
			}
		}
	}
	dropStaleTemplates(ctx, conn, "assessd_template_"+store.MigrationsHash())
	for name, wantKept := range map[string]bool{"assessd_template_testrecent": true, "assessd_template_teststale": false, "assessd_template_testundated": false} {
		var kept bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&kept); err != nil {
			t.Fatal(err)
		}
		if kept != wantKept {
			t.Errorf("%s kept = %v, want %v", name, kept, wantKept)
		}
	}
}

// TestATemplateGoneIsBuiltAgain: a process told of a template that has
// since been dropped (as a checkout of other migrations may) finds or
// builds the current one and goes on.
func TestATemplateGoneIsBuiltAgain(t *testing.T) {
	newCopy := func() string {
		t.Helper()
		return newURL(t, Create)
	}
	newCopy()
	template.Lock()
	template.name = "assessd_template_gone"
	template.Unlock()
	if got := schemaVersion(t, newCopy(), false); got == 0 {
		t.Fatal("the database made after the template went is not migrated")
	}
	template.Lock()
	defer template.Unlock()
	if want := "assessd_template_" + store.MigrationsHash(); template.name != want {
		t.Fatalf("template %q, want %q", template.name, want)
	}
}
