// Package apptest runs assessd for end-to-end tests: a server on a fresh
// database (Env), an organization with a user and an API key of each role
// (Tenant), requests with their decoded answers (Response), and a browser
// walking the sign-in and consent pages (oauth.go). The end-to-end tests of
// internal/app and of the packages that own pages use it.
package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/redistest"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// Env is a running assessd on a fresh database.
type Env struct {
	T   *testing.T
	Srv *httptest.Server
	App *app.App
	DB  *store.DB
}

// New starts assessd on a fresh database.
func New(t *testing.T) *Env {
	t.Helper()
	return NewWithClock(t, nil)
}

// NewWithClock starts assessd whose token lifetimes follow now.
func NewWithClock(t *testing.T, now func() time.Time) *Env {
	t.Helper()
	return NewWithConfig(t, func(c *app.Config) { c.Now = now })
}

// NewWithConfig starts assessd with the configuration adjust leaves.
func NewWithConfig(t *testing.T, adjust func(*app.Config)) *Env {
	t.Helper()
	return NewOn(t, storetest.New(t), adjust)
}

// NewAt starts assessd on the database at url.
func NewAt(t *testing.T, url string) *Env {
	t.Helper()
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return NewOn(t, db, nil)
}

// NewOn starts an assessd instance on db, with the configuration adjust
// (if not nil) leaves; several instances may share one database. Each
// server gets its own private Redis.
func NewOn(t *testing.T, db *store.DB, adjust func(*app.Config)) *Env {
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
	t.Cleanup(func() { _ = a.Close() })
	handler = a.Handler
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	a.Start(ctx)
	return &Env{T: t, Srv: srv, App: a, DB: db}
}

// Tenant is an organization with one user of each role and their API keys.
type Tenant struct {
	Org   tenancy.Org
	Users map[tenancy.Role]tenancy.User
	Keys  map[tenancy.Role]string
}

// NewTenant creates an organization in country on plan, with a user and
// an API key of each role.
func (e *Env) NewTenant(country, plan string) Tenant {
	e.T.Helper()
	ctx := context.Background()
	org, err := e.App.Tenancy.CreateOrg(ctx, tenancy.NewOrg{Name: "School " + country, Country: country, Plan: plan})
	if err != nil {
		e.T.Fatal(err)
	}
	ctx = tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	tn := Tenant{Org: org, Users: map[tenancy.Role]tenancy.User{}, Keys: map[tenancy.Role]string{}}
	for _, r := range tenancy.Roles {
		u, err := e.App.Tenancy.CreateUser(ctx, tenancy.NewUser{Email: string(r) + "@" + org.ID + ".test", Name: string(r), Role: r})
		if err != nil {
			e.T.Fatal(err)
		}
		_, key, err := e.App.Tenancy.CreateAPIKey(ctx, u.ID, "test")
		if err != nil {
			e.T.Fatal(err)
		}
		tn.Users[r], tn.Keys[r] = u, key
	}
	return tn
}

// Response is a decoded API answer.
type Response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

// Reason returns the ErrorInfo reason of an error body.
func (r Response) Reason() string {
	details, _ := r.Body["details"].([]any)
	for _, d := range details {
		if m, ok := d.(map[string]any); ok && m["@type"] == "type.googleapis.com/google.rpc.ErrorInfo" {
			s, _ := m["reason"].(string)
			return s
		}
	}
	return ""
}

// Field returns the first BadRequest field violation of an error body.
func (r Response) Field() string {
	details, _ := r.Body["details"].([]any)
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

// Must fails the test unless r has status want.
func (r Response) Must(t *testing.T, want int) Response {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d; body %s", r.Status, want, r.Raw)
	}
	return r
}

// Do sends a request; body may be nil, a string (sent as is) or a value to
// encode as JSON.
func (e *Env) Do(method, path, key string, body any) Response {
	e.T.Helper()
	return e.DoWith(method, path, key, body, nil)
}

// DoWith sends a request as Do does, with extra headers.
func (e *Env) DoWith(method, path, key string, body any, header http.Header) Response {
	e.T.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.T.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.Srv.URL+path, rd)
	if err != nil {
		e.T.Fatal(err)
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
	res, err := e.Srv.Client().Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := Response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	_ = json.Unmarshal(raw, &out.Body)
	return out
}

// Throttled sends until an answer is 429 and returns it. The limit allows
// burst requests at once, refilled at perMinute: the 429 must come after
// the burst and no later than the refills the sending took time for allow,
// however slow the machine (under the race detector on busy cores a
// request can take a second).
func Throttled(t *testing.T, burst, perMinute int, send func() Response) Response {
	t.Helper()
	start := time.Now()
	for n := 1; ; n++ {
		r := send()
		if r.Status == http.StatusTooManyRequests {
			if n <= burst {
				t.Fatalf("request %d answered 429, within the burst of %d", n, burst)
			}
			return r
		}
		took := time.Since(start)
		if refills := int(took.Minutes() * float64(perMinute)); n > burst+refills {
			t.Fatalf("request %d answered %d; a burst of %d and the %d refills of %s allow %d", n, r.Status, burst, refills, took.Round(time.Millisecond), burst+refills)
		}
	}
}

// AuditEntry finds the newest entry with action on targetID in tn's audit
// log, read by its owner over the API, and checks its actor and target.
func (e *Env) AuditEntry(tn Tenant, action, actorID, targetType, targetID string) map[string]any {
	e.T.Helper()
	r := e.Do("GET", "/audit-logs?action="+url.QueryEscape(action)+"&targetId="+url.QueryEscape(targetID), tn.Keys[tenancy.RoleOwner], nil).Must(e.T, http.StatusOK)
	list, _ := r.Body["auditLogs"].([]any)
	if len(list) == 0 {
		e.T.Fatalf("no %s entry for %s %s: %s", action, targetType, targetID, r.Raw)
	}
	entry := list[0].(map[string]any)
	actor := entry["actor"].(map[string]any)
	target := entry["target"].(map[string]any)
	if actor["id"] != actorID || target["type"] != targetType || target["id"] != targetID {
		e.T.Fatalf("%s entry: actor %v, target %v; want actor %s, target %s %s", action, actor, target, actorID, targetType, targetID)
	}
	return entry
}

// EmbedSession creates an embed session with body and returns its id.
func (e *Env) EmbedSession(key string, body map[string]any) string {
	e.T.Helper()
	return Str(e.Do("POST", "/embed-sessions", key, body).Must(e.T, http.StatusOK).Body, "id")
}

// Main runs a package's end-to-end tests with the default logger silenced
// (the OIDC library writes to it): call it from TestMain.
func Main(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	os.Exit(m.Run())
}
