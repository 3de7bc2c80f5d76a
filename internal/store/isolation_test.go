package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
)

func TestCheckIsolationAcceptsTheApplicationRole(t *testing.T) {
	// The URL names the superuser postgres: only the role switch keeps
	// statements under row-level security.
	db := storetest.New(t)
	if err := db.CheckIsolation(context.Background()); err != nil {
		t.Fatalf("CheckIsolation: %v", err)
	}
}

func TestCheckIsolationRefusesRolesThatBypassRLS(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	bypass := "assessd_test_bypass_" + hex.EncodeToString(b[:])
	admin, err := pgx.Connect(ctx, storetest.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+bypass); err != nil {
			t.Errorf("drop role: %v", err)
		}
		admin.Close(context.Background())
	})
	if _, err := admin.Exec(ctx, "CREATE ROLE "+bypass+" NOLOGIN BYPASSRLS"); err != nil {
		t.Fatal(err)
	}

	for role, want := range map[string]string{bypass: "BYPASSRLS", "postgres": "superuser"} {
		store.SetRole(db, role)
		err := db.CheckIsolation(ctx)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("role %s: CheckIsolation = %v, want a refusal naming %s", role, err, want)
		}
	}
}
