package app_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// TestStarvedPoolAnswers503: while slow work holds every connection of the
// pool, a request that needs the database is answered 503
// DATABASE_UNAVAILABLE with Retry-After once the acquire timeout runs out,
// rather than hanging until its client gives up; the next request after
// the pool frees answers 200.
func TestStarvedPoolAnswers503(t *testing.T) {
	t.Parallel()
	const wait = 300 * time.Millisecond
	db, err := store.Open(context.Background(), storetest.NewURL(t)+"&pool_max_conns=2", store.WithAcquireTimeout(wait))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	e := apptest.NewOn(t, db, nil)
	tn := e.NewTenant("DE", "enterprise")
	path := "/users/" + tn.Users[tenancy.RoleStudent].ID
	key := tn.Keys[tenancy.RoleAdmin]
	if r := e.Do(http.MethodGet, path, key, nil); r.Status != http.StatusOK {
		t.Fatalf("before: %d %s", r.Status, r.Raw)
	}

	ctx := store.WithOrg(context.Background(), tn.Org.ID)
	release := make(chan struct{})
	free := sync.OnceFunc(func() { close(release) })
	t.Cleanup(free) // before db.Close, which waits for the held connections
	held, done := make(chan struct{}, 2), make(chan error, 2)
	for range 2 {
		go func() {
			done <- db.Tx(ctx, func(context.Context) error {
				held <- struct{}{}
				<-release
				return nil
			})
		}()
	}
	// A transaction that fails to start (the app's background work took a
	// connection first) is a failed setup, not a hang.
	for range 2 {
		select {
		case <-held:
		case err := <-done:
			t.Fatalf("a transaction holding the pool failed to start: %v", err)
		}
	}

	start := time.Now()
	r := e.Do(http.MethodGet, path, key, nil)
	took := time.Since(start)
	free()
	if r.Status != http.StatusServiceUnavailable || r.Reason() != "DATABASE_UNAVAILABLE" || r.Header.Get("Retry-After") != "1" {
		t.Fatalf("starved: %d %s (Retry-After %q), want 503 DATABASE_UNAVAILABLE with Retry-After 1", r.Status, r.Raw, r.Header.Get("Retry-After"))
	}
	if took > wait+5*time.Second {
		t.Errorf("starved request took %v, want about %v", took, wait)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if r := e.Do(http.MethodGet, path, key, nil); r.Status != http.StatusOK {
		t.Fatalf("after: %d %s", r.Status, r.Raw)
	}
}
