package tenancy_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/internal/webhooks/event"
	"github.com/assessd/assessd/tenancy"
)

// TestRecordingAWriteCostsNoRoundTrip: what records an administrative
// write (its audit entry, webhook event and credential notification) goes
// with the transaction's COMMIT (decision 0142), so the write costs its own
// statements, the BEGIN and the COMMIT, however much it records, and all of it is
// there afterwards.
func TestRecordingAWriteCostsNoRoundTrip(t *testing.T) {
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	trips := &storetest.RoundTrips{}
	db := storetest.New(t, store.WithTracer(trips))
	s := tenancy.NewService(db)
	s.UserEvents = event.NewRecorder(func(resource any) (json.RawMessage, error) { return json.Marshal(resource) }).Users(db)
	org, err := s.CreateOrg(ctx, tenancy.NewOrg{Name: "X", Country: "US"})
	if err != nil {
		t.Fatal(err)
	}
	sys := tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	if _, err := db.Q(sys).Exec(sys, `INSERT INTO webhook_endpoints (id, org_id, url, events, secret)
		VALUES ('whe_users', app_org_id(), 'https://hooks.example.test/', '{user.created,user.updated,user.deleted}', '\x00')`); err != nil {
		t.Fatal(err)
	}

	// Each write's own statements (the reads that authorize and validate
	// it, the change), then the COMMIT with everything that records it.
	costs := func(name string, want int64, write func() error) {
		t.Helper()
		before := trips.Count()
		if err := write(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n := trips.Count() - before; n != want {
			t.Errorf("%s took %d round trips, want %d", name, n, want)
		}
	}
	var u tenancy.User
	costs("CreateUser (insert)", 3, func() (err error) {
		u, err = s.CreateUser(sys, tenancy.NewUser{Email: "r@x.test", Name: "R", Role: tenancy.RoleTeacher})
		return err
	})
	var keyID string
	costs("CreateAPIKey (user read, bound, insert)", 5, func() error {
		k, _, err := s.CreateAPIKey(sys, u.ID, "ci")
		keyID = k.ID
		return err
	})
	costs("RevokeAPIKey (key read, update)", 4, func() error { return s.RevokeAPIKey(sys, keyID) })
	role := tenancy.RoleStudent
	costs("UpdateUser (read, update)", 4, func() error {
		_, err := s.UpdateUser(sys, u.ID, tenancy.UserPatch{Role: &role})
		return err
	})
	costs("DeleteUser (read, delete)", 4, func() error { return s.DeleteUser(sys, u.ID) })

	entries, _, err := s.AuditLogs(sys, audit.Filter{}, paging.Page{Size: 50})
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	for _, e := range entries {
		recorded[e.Action] = true
	}
	for _, action := range []string{"user.created", "api_key.created", "api_key.revoked", "user.updated", "user.deleted"} {
		if !recorded[action] {
			t.Errorf("no %s audit entry among %v", action, recorded)
		}
	}
	var events int
	if err := db.Q(sys).QueryRow(sys, `SELECT count(*) FROM webhook_events`).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if events != 3 {
		t.Errorf("%d webhook events recorded, want 3 (user created, updated, deleted)", events)
	}
}
