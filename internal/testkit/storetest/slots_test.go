package storetest

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/store"
)

// claimedSlot claims a slot for t, freed when t ends, and returns its
// name and an owner's connection to it.
func claimedSlot(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	dbURL, release, ok, err := claimSlot(ctx)
	if err != nil || !ok {
		t.Fatalf("claim a slot: ok %v, %v", ok, err)
	}
	t.Cleanup(func() { _ = release() })
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/"), connect(t, dbURL)
}

func connect(t *testing.T, dbURL string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// TestASlotIsEmptiedForItsNextTest: the rows a test left are gone when the
// slot is claimed again, the schema version stays, and a session the test
// left open is ended.
func TestASlotIsEmptiedForItsNextTest(t *testing.T) {
	ctx := context.Background()
	name, conn := claimedSlot(t)
	if _, err := conn.Exec(ctx, `INSERT INTO orgs (id, name, country, plan, ai_region) VALUES ('org_slottest', 'Slot', 'US', 'free', 'global')`); err != nil {
		t.Fatal(err)
	}
	if err := prepareSlot(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := conn.Ping(ctx); err == nil {
		t.Error("the last test's session survived the slot's next claim")
	}
	again := connect(t, databaseURL(ServerURL(), name))
	var orgs, versions int
	if err := again.QueryRow(ctx, `SELECT (SELECT count(*) FROM orgs), (SELECT count(*) FROM schema_version)`).Scan(&orgs, &versions); err != nil {
		t.Fatal(err)
	}
	if orgs != 0 || versions != 1 {
		t.Fatalf("claimed again: %d orgs, %d schema versions; want 0 and 1", orgs, versions)
	}
}

// TestASlotWhoseSchemaChangedIsMadeAgain: a test's DDL does not reach the
// slot's next test.
func TestASlotWhoseSchemaChangedIsMadeAgain(t *testing.T) {
	ctx := context.Background()
	for _, ddl := range []string{
		`CREATE TABLE slot_leftover (id int)`,
		`ALTER FUNCTION app_org_id() RENAME TO app_org_id_gone`,
		`REVOKE SELECT ON orgs FROM ` + pgx.Identifier{store.AppRole}.Sanitize(),
	} {
		name, conn := claimedSlot(t)
		if _, err := conn.Exec(ctx, ddl); err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
		_ = conn.Close(ctx)
		if err := prepareSlot(ctx, name); err != nil {
			t.Fatal(err)
		}
		var fingerprint, want string
		if err := connect(t, databaseURL(ServerURL(), name)).QueryRow(ctx, fingerprintSQL).Scan(&fingerprint); err != nil {
			t.Fatal(err)
		}
		if err := connect(t, NewURL(t)).QueryRow(ctx, fingerprintSQL).Scan(&want); err != nil {
			t.Fatal(err)
		}
		if fingerprint != want {
			t.Errorf("after %q, the slot claimed again has another schema than a fresh one", ddl)
		}
	}
}
