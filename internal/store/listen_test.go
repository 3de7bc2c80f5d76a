package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
)

// The listener gets its own connection from the direct URL, which may
// carry pool parameters when it defaults to the pool's URL.
func TestListenReceivesNotifications(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := store.Open(ctx, storetest.NewURL(t)+"&pool_max_conns=2")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ready, got := make(chan struct{}), make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- db.Listen(ctx, "assessd_test", func() { close(ready) }, func(string) { got <- struct{}{} })
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Listen: %v", err)
	}
	if _, err := db.Unscoped().Exec(ctx, `SELECT pg_notify('assessd_test', '')`); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-ctx.Done():
		t.Fatal("no notification received")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Listen after cancel: %v, want context.Canceled", err)
	}
}
