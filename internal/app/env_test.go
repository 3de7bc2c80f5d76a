package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/redistest"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// env is a running assessd on a fresh database.
type env struct {
	t   *testing.T
	srv *httptest.Server
	app *app.App
	db  *store.DB
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWithClock(t, nil)
}

// newEnvWithClock starts assessd whose token lifetimes follow now.
func newEnvWithClock(t *testing.T, now func() time.Time) *env {
	t.Helper()
	return newEnvWithConfig(t, func(c *app.Config) { c.Now = now })
}

// newEnvWithConfig starts assessd with the configuration adjust leaves.
func newEnvWithConfig(t *testing.T, adjust func(*app.Config)) *env {
	t.Helper()
	return newEnvOn(t, storetest.New(t), adjust)
}

// newEnvAt starts assessd on the database at url.
func newEnvAt(t *testing.T, url string) *env {
	t.Helper()
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return newEnvOn(t, db, nil)
}

// newEnvOn starts an assessd instance on db, with the configuration adjust
// (if not nil) leaves; several instances may share one database. Each
// server gets its own in-process Redis, so the tests need no Redis server.
func newEnvOn(t *testing.T, db *store.DB, adjust func(*app.Config)) *env {
	t.Helper()
	// The issuer must be known before the server has an address: route the
	// listener through a handler set once the app is built.
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	cfg := app.Config{BaseURL: srv.URL, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Redis: redistest.Client(t)}
	if adjust != nil {
		adjust(&cfg)
	}
	a, err := app.New(context.Background(), db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	handler = a.Handler
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	a.Start(ctx)
	return &env{t: t, srv: srv, app: a, db: db}
}

// tenant is an organization with one user of each role and their API keys.
type tenant struct {
	org   tenancy.Org
	users map[tenancy.Role]tenancy.User
	keys  map[tenancy.Role]string
}

func (e *env) newTenant(country, plan string) tenant {
	e.t.Helper()
	ctx := context.Background()
	org, err := e.app.Tenancy.CreateOrg(ctx, tenancy.NewOrg{Name: "School " + country, Country: country, Plan: plan})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx = tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	tn := tenant{org: org, users: map[tenancy.Role]tenancy.User{}, keys: map[tenancy.Role]string{}}
	for _, r := range tenancy.Roles {
		u, err := e.app.Tenancy.CreateUser(ctx, tenancy.NewUser{Email: string(r) + "@" + org.ID + ".test", Name: string(r), Role: r})
		if err != nil {
			e.t.Fatal(err)
		}
		_, key, err := e.app.Tenancy.CreateAPIKey(ctx, u.ID, "test")
		if err != nil {
			e.t.Fatal(err)
		}
		tn.users[r], tn.keys[r] = u, key
	}
	return tn
}

// response is a decoded API answer.
type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

// reason returns the ErrorInfo reason of an error body.
func (r response) reason() string {
	details, _ := r.body["details"].([]any)
	for _, d := range details {
		if m, ok := d.(map[string]any); ok && m["@type"] == "type.googleapis.com/google.rpc.ErrorInfo" {
			s, _ := m["reason"].(string)
			return s
		}
	}
	return ""
}

// field returns the first BadRequest field violation of an error body.
func (r response) field() string {
	details, _ := r.body["details"].([]any)
	for _, d := range details {
		if m, ok := d.(map[string]any); ok && m["@type"] == "type.googleapis.com/google.rpc.BadRequest" {
			if v, ok := m["fieldViolations"].([]any); ok && len(v) > 0 {
				s, _ := v[0].(map[string]any)["field"].(string)
				return s
			}
		}
	}
	return ""
}

// do sends a request; body may be nil, a string (sent as is) or a value to
// encode as JSON.
func (e *env) do(method, path, key string, body any) response {
	e.t.Helper()
	return e.doWith(method, path, key, body, nil)
}

// doWith sends a request as do does, with extra headers.
func (e *env) doWith(method, path, key string, body any, header http.Header) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := response{status: res.StatusCode, header: res.Header, raw: raw}
	_ = json.Unmarshal(raw, &out.body)
	return out
}

// must fails the test unless r has status want.
func (r response) must(t *testing.T, want int) response {
	t.Helper()
	if r.status != want {
		t.Fatalf("status %d, want %d; body %s", r.status, want, r.raw)
	}
	return r
}

// throttled sends until an answer is 429 and returns it. The limit allows
// burst requests at once, refilled at perMinute: the 429 must come after
// the burst and no later than the refills the sending took time for allow,
// however slow the machine (under the race detector on busy cores a
// request can take a second).
func throttled(t *testing.T, burst, perMinute int, send func() response) response {
	t.Helper()
	start := time.Now()
	for n := 1; ; n++ {
		r := send()
		if r.status == http.StatusTooManyRequests {
			if n <= burst {
				t.Fatalf("request %d answered 429, within the burst of %d", n, burst)
			}
			return r
		}
		took := time.Since(start)
		if refills := int(took.Minutes() * float64(perMinute)); n > burst+refills {
			t.Fatalf("request %d answered %d; a burst of %d and the %d refills of %s allow %d", n, r.status, burst, refills, took.Round(time.Millisecond), burst+refills)
		}
	}
}

// TestMain silences the OIDC library's default-logger output.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	os.Exit(m.Run())
}
