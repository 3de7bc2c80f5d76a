package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/tenancy"
)

// The transport alone answers GET /users/{id} with the getter's user in the
// API's JSON, and a domain error with its status (the server's middleware,
// not the transport, gives errors the API's shape), so what the benchmark
// measures through it is the API's transport work.
func TestUserTransportServesTheGetter(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	want := tenancy.User{ID: "usr_01JX0000000000000000000000", OrgID: "org_01JX0000000000000000000000", Email: "ada@example.com",
		Name: "Ada", Role: tenancy.RoleAdmin, Metadata: tenancy.Metadata{"team": "red"}, CreatedAt: at, UpdatedAt: at}
	h, err := NewUserTransport(func(_ context.Context, id string) (tenancy.User, error) {
		if id != want.ID {
			return tenancy.User{}, errs.NotFound("user")
		}
		return want, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	get := func(id string) (int, map[string]any) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/users/"+id, nil))
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("GET /users/%s: %v in %q", id, err, rec.Body.String())
		}
		return rec.Code, body
	}

	code, body := get(want.ID)
	if code != http.StatusOK || body["id"] != want.ID || body["email"] != want.Email || body["role"] != "admin" ||
		body["createdAt"] != "2026-11-26T12:00:00Z" || body["metadata"].(map[string]any)["team"] != "red" {
		t.Errorf("GET the user: %d %v", code, body)
	}
	code, body = get("usr_01JX0000000000000000000001")
	if code != http.StatusNotFound || body["message"] != "user not found" {
		t.Errorf("GET another user: %d %v, want 404 user not found", code, body)
	}
}
