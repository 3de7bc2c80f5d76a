package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
)

// TestOnlySupportedServersRun: the server the tests run on passes, and a
// version before 13 is refused with what it is and what is needed.
func TestOnlySupportedServersRun(t *testing.T) {
	if err := storetest.New(t).CheckVersion(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := store.Supported(120022); err == nil || !strings.Contains(err.Error(), "PostgreSQL 12.22 is too old: assessd needs 13 or later") {
		t.Fatalf("PostgreSQL 12.22: %v", err)
	}
	if err := store.Supported(130000); err != nil {
		t.Fatalf("PostgreSQL 13.0: %v", err)
	}
}
