package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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

// Subscribe tells its caller of an interruption once, however many
// attempts fail until the database is back, and of each return.
func TestSubscribeReportsEachInterruptionOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dbURL := storetest.NewURL(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	role := "assessd_test_listener_" + hex.EncodeToString(b[:])
	// The direct URL names a role that does not exist yet: every attempt
	// to listen fails until it is created.
	direct, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	direct.User = url.User(role)
	db, err := store.Open(ctx, dbURL, store.WithDirectURL(direct.String()))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())

	var ups, downs atomic.Int32
	notified := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.Subscribe(ctx, store.Subscription{Channel: "assessd_test",
			Up: func() { ups.Add(1) }, Notify: func(string) { notified <- struct{}{} }, Down: func(error) { downs.Add(1) }})
	}()
	defer func() {
		cancel()
		<-done
		if _, err := admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize()); err != nil {
			t.Errorf("drop role: %v", err)
		}
	}()
	// Attempts at 0 s and 1 s fail.
	time.Sleep(2500 * time.Millisecond)
	if n := downs.Load(); n != 1 || ups.Load() != 0 {
		t.Fatalf("after failed attempts: %d downs and %d ups, want 1 and 0", n, ups.Load())
	}
	if _, err := admin.Exec(ctx, "CREATE ROLE "+pgx.Identifier{role}.Sanitize()+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			if ctx.Err() != nil {
				t.Fatalf("%s: %d ups, %d downs", what, ups.Load(), downs.Load())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("listening once the role exists", func() bool { return ups.Load() == 1 })
	if _, err := admin.Exec(ctx, `SELECT pg_notify('assessd_test', '')`); err != nil {
		t.Fatal(err)
	}
	<-notified

	// A listener that was up and fails is reported again, and listens again.
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, role); err != nil {
		t.Fatal(err)
	}
	waitFor("listening again after the interruption", func() bool { return ups.Load() == 2 })
	if n := downs.Load(); n != 2 {
		t.Fatalf("%d downs after two interruptions, want 2", n)
	}
}
