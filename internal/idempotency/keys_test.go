package idempotency

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// TestKeysLeaseAndRetention: a key reserved by a request that never
// finished is taken afresh once its lease ends, a finished one is kept for
// its retention, and the sweep deletes it after, of every organization.
func TestKeysLeaseAndRetention(t *testing.T) {
	db := storetest.New(t)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	k := New(db, func() time.Time { return now }, nil, nil)
	ctx := newOrg(t, db)
	u := use{principal: "api_key::usr_1", key: "k1", request: "POST /exams"}
	reserve := func(what string, wantFresh bool) stored {
		t.Helper()
		fresh, s, err := k.reserve(ctx, u)
		if err != nil || fresh != wantFresh {
			t.Fatalf("%s: fresh %v, %v; want fresh %v", what, fresh, err, wantFresh)
		}
		return s
	}
	reserve("first use", true)
	if s := reserve("while it runs", false); s.status != 0 {
		t.Fatalf("while it runs: status %d, want none yet", s.status)
	}
	now = now.Add(Lease - time.Second)
	reserve("within the lease", false)
	now = now.Add(2 * time.Second)
	reserve("past the lease of a request that never finished", true)

	if err := k.complete(ctx, u, []byte("hash"), 200, "application/json", bytes.NewBufferString(`{"id":"exm_1"}`)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(Lease + time.Hour)
	if s := reserve("a finished request, past the lease", false); s.status != 200 || string(s.response) != `{"id":"exm_1"}` {
		t.Fatalf("the finished request holds %+v", s)
	}
	count := func() (n int) {
		t.Helper()
		if err := db.Q(ctx).QueryRow(ctx, `SELECT count(*) FROM idempotency_keys`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := k.Sweep(context.Background()); err != nil || count() != 1 {
		t.Fatalf("a sweep within the retention: %v, %d keys left, want 1", err, count())
	}
	now = now.Add(Retention)
	if err := k.Sweep(context.Background()); err != nil || count() != 0 {
		t.Fatalf("a sweep past the retention: %v, %d keys left, want 0", err, count())
	}
}

// TestAPanicFreesTheKey: a request whose handler panicked (the recoverer
// answers it 500) wrote nothing that counts, so its retry runs, and is
// then kept.
func TestAPanicFreesTheKey(t *testing.T) {
	db := storetest.New(t)
	k := New(db, nil, nil, nil)
	newOrg(t, db)
	ctx := tenancy.WithCaller(context.Background(), &tenancy.Caller{Kind: tenancy.KindAPIKey, OrgID: "org_a", UserID: "usr_1"})
	runs := 0
	h := k.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if runs++; runs == 1 {
			panic("the first run fails") //nolint:forbidigo // the panic the recoverer answers 500
		}
		_, _ = w.Write([]byte(`{"id":"exm_1"}`))
	}))
	send := func() *httptest.ResponseRecorder {
		t.Helper()
		rec := httptest.NewRecorder()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/exams", strings.NewReader(`{"name":"E"}`))
		req.Header.Set(Header, "k1")
		func() {
			defer func() { _ = recover() }()
			h.ServeHTTP(rec, req)
		}()
		return rec
	}
	send()
	if rec := send(); runs != 2 || rec.Body.String() != `{"id":"exm_1"}` || rec.Header().Get(ReplayedHeader) != "" {
		t.Fatalf("the retry after a panic: %d runs, %q replayed %q", runs, rec.Body, rec.Header().Get(ReplayedHeader))
	}
	if rec := send(); runs != 2 || rec.Body.String() != `{"id":"exm_1"}` || rec.Header().Get(ReplayedHeader) != "true" {
		t.Fatalf("the retry after the success: %d runs, %q", runs, rec.Body)
	}
}

// TestARunningRequestKeepsItsKey: a request that runs past the lease (a
// slow upload) renews its reservation, so a retry meanwhile is told to
// wait rather than run beside it.
func TestARunningRequestKeepsItsKey(t *testing.T) {
	db := storetest.New(t)
	var mu sync.Mutex
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	k := New(db, clock, nil, nil)
	k.renewEvery = 5 * time.Millisecond
	ctx := newOrg(t, db)
	started, finish := make(chan struct{}), make(chan struct{})
	h := k.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-finish
		_, _ = w.Write([]byte(`{"id":"imp_1"}`))
	}))
	req := httptest.NewRequestWithContext(tenancy.WithCaller(context.Background(), &tenancy.Caller{Kind: tenancy.KindAPIKey, OrgID: "org_a", UserID: "usr_1"}),
		http.MethodPost, "/exam-imports", strings.NewReader("zip"))
	req.Header.Set(Header, "k1")
	served := make(chan struct{})
	go func() { h.ServeHTTP(httptest.NewRecorder(), req); close(served) }()
	<-started

	mu.Lock()
	now = now.Add(Lease + time.Second)
	mu.Unlock()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var at time.Time
		if err := db.Q(ctx).QueryRow(ctx, `SELECT created_at FROM idempotency_keys`).Scan(&at); err != nil {
			t.Fatal(err)
		}
		if at.Equal(clock()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reservation of a running request was not renewed: %v", at)
		}
	}
	u := use{principal: "api_key::usr_1", key: "k1", request: "POST /exam-imports"}
	if fresh, s, err := k.reserve(ctx, u); fresh || s.status != 0 || err != nil {
		t.Fatalf("a retry past the first lease: fresh %v, status %d, %v; want the key in use", fresh, s.status, err)
	}
	close(finish)
	<-served
	if fresh, s, err := k.reserve(ctx, u); fresh || s.status != http.StatusOK || err != nil {
		t.Fatalf("a retry after the request: fresh %v, status %d, %v; want its response", fresh, s.status, err)
	}
}

// TestAKeyWhoseRequestWroteNeverRunsTwice: a request notes on its key, in
// the transaction of each write, that it changed data. A process that dies
// after such a write, before it kept the answer, leaves a key that its
// lease's end does not free: the retry is told the answer was lost, and
// nothing runs twice. A failure after a write is kept and replayed; a
// panic after one is told at once. A request that only read is run again.
func TestAKeyWhoseRequestWroteNeverRunsTwice(t *testing.T) {
	db := storetest.New(t)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	k := New(db, func() time.Time { return now }, nil, nil)
	org := newOrg(t, db)
	users := 0
	addUser := func(ctx context.Context) error {
		users++
		_, err := db.Q(ctx).Exec(ctx, `INSERT INTO users (id, org_id, email, name, role) VALUES ($1, 'org_a', $1 || '@example.com', 'n', 'student')`,
			fmt.Sprintf("usr_%d", users))
		return err
	}
	countUsers := func() (n int) {
		t.Helper()
		if err := db.Q(org).QueryRow(org, `SELECT count(*) FROM users`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// The process dies after the commit: nothing keeps the answer.
	u := use{principal: "api_key::usr_0", key: "crash", request: "POST /users"}
	if fresh, _, err := k.reserve(org, u); !fresh || err != nil {
		t.Fatalf("first use: fresh %v, %v", fresh, err)
	}
	if err := db.Tx(noteWrites(org, u), addUser); err != nil {
		t.Fatal(err)
	}
	if fresh, s, err := k.reserve(org, u); fresh || s.status != 0 || s.unanswered || err != nil {
		t.Fatalf("within the lease: fresh %v, %+v, %v; want the key in use", fresh, s, err)
	}
	now = now.Add(Lease + time.Second)
	if fresh, s, err := k.reserve(org, u); fresh || !s.unanswered || err != nil {
		t.Fatalf("past the lease of a request that wrote: fresh %v, %+v, %v; want it unanswered", fresh, s, err)
	}
	now = now.Add(Retention)
	if fresh, _, err := k.reserve(org, u); !fresh || err != nil {
		t.Fatalf("past the retention: fresh %v, %v; want the key taken afresh", fresh, err)
	}

	// Through the middleware: a write, then a panic, an error, or a read
	// and a panic.
	ctx := tenancy.WithCaller(org, &tenancy.Caller{Kind: tenancy.KindAPIKey, OrgID: "org_a", UserID: "usr_0"})
	runs := map[string]int{}
	h := k.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(Header)
		runs[key]++
		switch key {
		case "write-then-panic":
			if err := db.Tx(r.Context(), addUser); err != nil {
				t.Error(err)
			}
			panic("after the write") //nolint:forbidigo // the panic the recoverer answers 500
		case "write-then-fail":
			if err := addUser(r.Context()); err != nil {
				t.Error(err)
			}
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"reason":"LATER_STEP"}`))
		case "read-then-panic":
			if runs[key] == 1 {
				var n int
				if err := db.Q(r.Context()).QueryRow(r.Context(), `SELECT count(*) FROM users`).Scan(&n); err != nil {
					t.Error(err)
				}
				panic("after the read") //nolint:forbidigo // the panic the recoverer answers 500
			}
			_, _ = w.Write([]byte(`{}`))
		}
	}))
	send := func(key, path string) *httptest.ResponseRecorder {
		t.Helper()
		rec := httptest.NewRecorder()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, path, strings.NewReader(`{"name":"n"}`))
		req.Header.Set(Header, key)
		func() {
			defer func() { _ = recover() }()
			h.ServeHTTP(rec, req)
		}()
		return rec
	}
	before := countUsers()
	send("write-then-panic", "/users")
	if rec := send("write-then-panic", "/users"); rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "IDEMPOTENCY_KEY_UNANSWERED") {
		t.Errorf("the retry of a request that panicked after a write: %d %s", rec.Code, rec.Body)
	}
	if rec := send("write-then-panic", "/exams"); rec.Code != http.StatusUnprocessableEntity {
		t.Errorf("its key on another path: %d %s, want 422", rec.Code, rec.Body)
	}
	send("write-then-fail", "/users")
	if rec := send("write-then-fail", "/users"); rec.Code != http.StatusBadRequest || rec.Body.String() != `{"reason":"LATER_STEP"}` || rec.Header().Get(ReplayedHeader) != "true" {
		t.Errorf("the retry of a request that failed after a write: %d %q replayed %q", rec.Code, rec.Body, rec.Header().Get(ReplayedHeader))
	}
	send("read-then-panic", "/users")
	if rec := send("read-then-panic", "/users"); rec.Code != http.StatusOK || rec.Header().Get(ReplayedHeader) != "" {
		t.Errorf("the retry of a request that panicked after a read: %d %s", rec.Code, rec.Body)
	}
	if runs["write-then-panic"] != 1 || runs["write-then-fail"] != 1 || runs["read-then-panic"] != 2 {
		t.Errorf("runs %v; want each request that wrote run once, the one that read twice", runs)
	}
	if n := countUsers() - before; n != 2 {
		t.Errorf("%d users added, want 2", n)
	}
}

// newOrg adds the organization org_a to db and returns a context scoped to
// it.
func newOrg(t *testing.T, db *store.DB) context.Context {
	t.Helper()
	ctx := store.WithOrg(context.Background(), "org_a")
	if _, err := db.Q(ctx).Exec(ctx, `INSERT INTO orgs (id, name, country, plan, ai_region) VALUES ('org_a', 'A', 'DE', 'free', 'eu')`); err != nil {
		t.Fatal(err)
	}
	return ctx
}
