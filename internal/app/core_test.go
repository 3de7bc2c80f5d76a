package app_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

func TestAuthentication(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("DE", "pro")
	key := tn.Keys[tenancy.RoleOwner]

	for name, auth := range map[string]string{
		"missing":   "",
		"malformed": "ak_not-a-key",
		"unknown":   "ak_01ARZ3NDEKTSV4RRFFQ69G5FAV_" + strings.Repeat("x", 43),
		"tampered":  key[:len(key)-2] + "xx",
	} {
		r := e.Do("GET", "/me", auth, nil).Must(t, http.StatusUnauthorized)
		if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: WWW-Authenticate = %q", name, r.Header.Get("WWW-Authenticate"))
		}
		if r.Body["code"] != float64(16) || r.Reason() != "UNAUTHENTICATED" {
			t.Errorf("%s: body %s is not a google.rpc.Status UNAUTHENTICATED", name, r.Raw)
		}
	}

	me := e.Do("GET", "/me", key, nil).Must(t, http.StatusOK)
	if me.Body["id"] != tn.Users[tenancy.RoleOwner].ID {
		t.Fatalf("GET /me = %s", me.Raw)
	}

	// Revocation applies on the very next request.
	ctx := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.Org.ID))
	// Uses are written in the background; flushing now makes the write
	// happen before the read.
	if err := e.App.Tenancy.FlushKeyUses(ctx); err != nil {
		t.Fatal(err)
	}
	keys, err := e.App.Tenancy.ListAPIKeys(ctx, tn.Users[tenancy.RoleOwner].ID)
	if err != nil || len(keys) != 1 {
		t.Fatalf("ListAPIKeys = %v, %v", keys, err)
	}
	if keys[0].LastUsedAt == nil {
		t.Error("last_used_at was not recorded")
	}
	if err := e.App.Tenancy.RevokeAPIKey(ctx, keys[0].ID); err != nil {
		t.Fatal(err)
	}
	e.Do("GET", "/me", key, nil).Must(t, http.StatusUnauthorized)
}

func TestFailedAuthenticationsAreRateLimited(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "free")
	owner := tn.Keys[tenancy.RoleOwner]
	// Guesses at the owner's key: its id with wrong secrets.
	guess := owner[:strings.LastIndex(owner, "_")+1] + "wrong"
	// 20 failures at once, then 10 a minute.
	last := apptest.Throttled(t, 20, 10, func() response { return e.Do("GET", "/me", guess, nil) })
	if last.Header.Get("Retry-After") == "" || last.Reason() != "TOO_MANY_FAILED_AUTHENTICATIONS" {
		t.Errorf("429 without Retry-After or reason: %v %s", last.Header, last.Raw)
	}
	// The limit is on failures from the address with that key: even the
	// right secret waits, so guessing learns nothing more...
	e.Do("GET", "/me", owner, nil).Must(t, http.StatusTooManyRequests)
	// ...while other credentials from the same address are not locked out.
	e.Do("GET", "/me", tn.Keys[tenancy.RoleTeacher], nil).Must(t, http.StatusOK)
	apptest.Throttled(t, 20, 10, func() response { return e.Do("GET", "/me", "ak_guess", nil) })
	e.Do("GET", "/me", tn.Keys[tenancy.RoleAdmin], nil).Must(t, http.StatusOK)
}

func TestScopesAndRoles(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	r := e.Do("GET", "/users", tn.Keys[tenancy.RoleStudent], nil).Must(t, http.StatusForbidden)
	if r.Reason() != "INSUFFICIENT_SCOPE" || !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
		t.Fatalf("student listing users: %s, WWW-Authenticate %q", r.Raw, r.Header.Get("WWW-Authenticate"))
	}
	e.Do("GET", "/users", tn.Keys[tenancy.RoleTeacher], nil).Must(t, http.StatusOK)
	r = e.Do("POST", "/users", tn.Keys[tenancy.RoleTeacher], map[string]any{"email": "n@x.test", "name": "N"}).Must(t, http.StatusForbidden)
	if r.Reason() != "INSUFFICIENT_SCOPE" {
		t.Fatalf("teacher creating a user: %s", r.Raw)
	}
	r = e.Do("POST", "/users", tn.Keys[tenancy.RoleAdmin], map[string]any{"email": "o@x.test", "name": "O", "role": "owner"}).Must(t, http.StatusForbidden)
	if r.Reason() != "ROLE_NOT_ALLOWED" {
		t.Fatalf("admin creating an owner: %s", r.Raw)
	}
	e.Do("GET", "/me", tn.Keys[tenancy.RoleStudent], nil).Must(t, http.StatusOK)
	e.Do("GET", "/org", tn.Keys[tenancy.RoleStudent], nil).Must(t, http.StatusOK)
	e.Do("GET", "/audit-logs", tn.Keys[tenancy.RoleTeacher], nil).Must(t, http.StatusForbidden)
}

func TestForeignIDsAreNotFound(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	a, b := e.NewTenant("DE", "pro"), e.NewTenant("FR", "pro")
	keyA := a.Keys[tenancy.RoleOwner]
	foreign := b.Users[tenancy.RoleStudent].ID

	for _, req := range []struct{ method, body string }{{"GET", ""}, {"PATCH", `{"name":"x"}`}, {"DELETE", ""}} {
		var body any
		if req.body != "" {
			body = req.body
		}
		r := e.Do(req.method, "/users/"+foreign, keyA, body).Must(t, http.StatusNotFound)
		if r.Reason() != "USER_NOT_FOUND" {
			t.Errorf("%s foreign user: %s", req.method, r.Raw)
		}
	}
	list := e.Do("GET", "/users?pageSize=200", keyA, nil).Must(t, http.StatusOK)
	for _, u := range list.Body["users"].([]any) {
		if u.(map[string]any)["orgId"] != a.Org.ID {
			t.Fatalf("org A's list contains %v", u)
		}
	}
	if got := e.Do("GET", "/users/"+foreign, b.Keys[tenancy.RoleOwner], nil).Must(t, http.StatusOK).Body["name"]; got != "student" {
		t.Fatalf("org B could not read its own user after org A's attempts: %v", got)
	}
}

func TestUserMetadata(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	key := tn.Keys[tenancy.RoleAdmin]

	r := e.Do("POST", "/users", key, `{"email":"m@x.test","name":"M","metadata":{"address":{"city":"Oslo"}}}`).Must(t, http.StatusBadRequest)
	if r.Field() != "metadata.address" || !strings.Contains(r.Body["message"].(string), "metadata.address") {
		t.Fatalf("nested metadata: %s", r.Raw)
	}
	e.Do("POST", "/users", key, `{"email":"m@x.test","name":"M","metadata":{"tags":["a"]}}`).Must(t, http.StatusBadRequest)

	u := e.Do("POST", "/users", key, `{"email":"m@x.test","name":"M","metadata":{"grade":"7","score":9.5,"active":true}}`).Must(t, http.StatusOK)
	id := u.Body["id"].(string)
	u = e.Do("PATCH", "/users/"+id, key, `{"metadata":{"grade":"8","score":null,"team":"red"}}`).Must(t, http.StatusOK)
	want := map[string]any{"grade": "8", "active": true, "team": "red"}
	checkMetadata := func(where string, got any) {
		t.Helper()
		m, _ := got.(map[string]any)
		if fmt.Sprint(m) != fmt.Sprint(want) {
			t.Fatalf("%s metadata = %v, want %v", where, m, want)
		}
	}
	checkMetadata("PATCH", u.Body["metadata"])
	checkMetadata("GET", e.Do("GET", "/users/"+id, key, nil).Must(t, http.StatusOK).Body["metadata"])
	list := e.Do("GET", "/users?email=m@x.test", key, nil).Must(t, http.StatusOK)
	checkMetadata("list", list.Body["users"].([]any)[0].(map[string]any)["metadata"])

	// A PATCH without metadata leaves it alone; an invalid one changes nothing.
	e.Do("PATCH", "/users/"+id, key, `{"name":"Em"}`).Must(t, http.StatusOK)
	e.Do("PATCH", "/users/"+id, key, `{"metadata":{"grade":"9","bad":[1]}}`).Must(t, http.StatusBadRequest)
	checkMetadata("after rejected PATCH", e.Do("GET", "/users/"+id, key, nil).Body["metadata"])

	many := map[string]any{}
	for i := range tenancy.MaxMetadataKeys {
		many[fmt.Sprintf("k%d", i)] = i
	}
	r = e.Do("PATCH", "/users/"+id, key, map[string]any{"metadata": many}).Must(t, http.StatusBadRequest)
	if r.Field() != "metadata" {
		t.Fatalf("too many keys: %s", r.Raw)
	}
}

func TestAIRegion(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	eu, us, free := e.NewTenant("NO", "pro"), e.NewTenant("US", "enterprise"), e.NewTenant("DE", "free")
	if eu.Org.AIRegion != "eu" || us.Org.AIRegion != "global" || free.Org.AIRegion != "eu" {
		t.Fatalf("defaults: NO=%s US=%s DE=%s", eu.Org.AIRegion, us.Org.AIRegion, free.Org.AIRegion)
	}
	patch := `{"settings":{"aiRegion":"global"}}`

	r := e.Do("PATCH", "/org", eu.Keys[tenancy.RoleTeacher], patch).Must(t, http.StatusForbidden)
	if r.Reason() != "INSUFFICIENT_SCOPE" {
		t.Fatalf("teacher: %s", r.Raw)
	}
	r = e.Do("PATCH", "/org", free.Keys[tenancy.RoleOwner], patch).Must(t, http.StatusForbidden)
	if r.Reason() != "PLAN_FEATURE_UNAVAILABLE" {
		t.Fatalf("free plan: %s", r.Raw)
	}
	// Setting the value the org already has is not a change, on any plan.
	e.Do("PATCH", "/org", free.Keys[tenancy.RoleOwner], `{"settings":{"aiRegion":"eu"}}`).Must(t, http.StatusOK)
	r = e.Do("PATCH", "/org", eu.Keys[tenancy.RoleAdmin], `{"settings":{"aiRegion":"mars"}}`).Must(t, http.StatusBadRequest)
	if r.Field() != "settings.aiRegion" {
		t.Fatalf("invalid region: %s", r.Raw)
	}

	org := e.Do("PATCH", "/org", eu.Keys[tenancy.RoleAdmin], patch).Must(t, http.StatusOK)
	if org.Body["settings"].(map[string]any)["aiRegion"] != "global" {
		t.Fatalf("PATCH /org = %s", org.Raw)
	}
	if got := e.Do("GET", "/org", eu.Keys[tenancy.RoleStudent], nil).Body["settings"].(map[string]any)["aiRegion"]; got != "global" {
		t.Fatalf("GET /org after change: aiRegion %v", got)
	}
	e.Do("PATCH", "/org", eu.Keys[tenancy.RoleAdmin], patch).Must(t, http.StatusOK) // no change: no entry

	logs := e.Do("GET", "/audit-logs?action=org.ai_region_changed", eu.Keys[tenancy.RoleOwner], nil).Must(t, http.StatusOK)
	entries := logs.Body["auditLogs"].([]any)
	if len(entries) != 1 {
		t.Fatalf("want exactly 1 org.ai_region_changed entry, got %s", logs.Raw)
	}
	entry := entries[0].(map[string]any)
	before := entry["before"].(map[string]any)["settings"].(map[string]any)["aiRegion"]
	after := entry["after"].(map[string]any)["settings"].(map[string]any)["aiRegion"]
	actor := entry["actor"].(map[string]any)
	if before != "eu" || after != "global" || actor["id"] != eu.Users[tenancy.RoleAdmin].ID || entry["origin"] != "platform" {
		t.Fatalf("audit entry = %v", entry)
	}
	for _, other := range []tenant{us, free} {
		if n := len(e.Do("GET", "/audit-logs?action=org.ai_region_changed", other.Keys[tenancy.RoleOwner], nil).Body["auditLogs"].([]any)); n != 0 {
			t.Fatalf("another organization sees %d region changes", n)
		}
	}
}

func TestAuditLogs(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	owner := tn.Keys[tenancy.RoleOwner]

	r := e.Do("POST", "/audit-logs", owner, `{"action":"exam.exported","target":{"type":"exam","id":"exm_1"}}`).Must(t, http.StatusForbidden)
	if r.Reason() != "CALLER_KIND_NOT_ALLOWED" {
		t.Fatalf("API key writing the audit log: %s", r.Raw)
	}

	// Setup wrote org.created, 4x user.created and 4x api_key.created.
	all := e.Do("GET", "/audit-logs", owner, nil).Must(t, http.StatusOK).Body["auditLogs"].([]any)
	if len(all) != 9 {
		t.Fatalf("got %d entries, want 9", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].(map[string]any)["id"].(string) < all[i].(map[string]any)["id"].(string) {
			t.Fatal("entries are not newest first")
		}
	}
	users := e.Do("GET", "/audit-logs?action=user.created&targetType=user", owner, nil).Must(t, http.StatusOK).Body["auditLogs"].([]any)
	if len(users) != 4 {
		t.Fatalf("action filter: %d entries", len(users))
	}
	student := tn.Users[tenancy.RoleStudent].ID
	byTarget := e.Do("GET", "/audit-logs?targetId="+student, owner, nil).Must(t, http.StatusOK).Body["auditLogs"].([]any)
	if len(byTarget) != 1 || byTarget[0].(map[string]any)["target"].(map[string]any)["id"] != student {
		t.Fatalf("target filter: %v", byTarget)
	}
	if n := len(e.Do("GET", "/audit-logs?until=2000-01-01T00:00:00Z", owner, nil).Must(t, http.StatusOK).Body["auditLogs"].([]any)); n != 0 {
		t.Fatalf("until filter returned %d old entries", n)
	}
	if n := len(e.Do("GET", "/audit-logs?since=2000-01-01T00:00:00Z&actorId=cli", owner, nil).Must(t, http.StatusOK).Body["auditLogs"].([]any)); n != 9 {
		t.Fatalf("since+actor filter returned %d entries", n)
	}
	e.Do("GET", "/audit-logs?since=2030-01-01T00:00:00Z&until=2020-01-01T00:00:00Z", owner, nil).Must(t, http.StatusBadRequest)

	// Pages of 4 walk all 9 entries exactly once.
	seen := map[string]bool{}
	token := ""
	for page := 0; ; page++ {
		r := e.Do("GET", "/audit-logs?pageSize=4&pageToken="+token, owner, nil).Must(t, http.StatusOK)
		for _, en := range r.Body["auditLogs"].([]any) {
			seen[en.(map[string]any)["id"].(string)] = true
		}
		token, _ = r.Body["nextPageToken"].(string)
		if token == "" {
			break
		}
		if page > 3 {
			t.Fatal("pagination does not end")
		}
	}
	if len(seen) != 9 {
		t.Fatalf("pagination saw %d distinct entries, want 9", len(seen))
	}
	e.Do("GET", "/audit-logs?pageToken=garbage", owner, nil).Must(t, http.StatusBadRequest)
}

func TestUserPaginationIsStableUnderInserts(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	key := tn.Keys[tenancy.RoleAdmin]
	for i := range 3 {
		e.Do("POST", "/users", key, map[string]any{"email": fmt.Sprintf("p%d@x.test", i), "name": "P"}).Must(t, http.StatusOK)
	}
	// 7 users now; read 3 per page and insert a user between pages.
	seen := map[string]int{}
	token := ""
	for i := 0; ; i++ {
		r := e.Do("GET", "/users?pageSize=3&pageToken="+token, key, nil).Must(t, http.StatusOK)
		for _, u := range r.Body["users"].([]any) {
			seen[u.(map[string]any)["id"].(string)]++
		}
		token, _ = r.Body["nextPageToken"].(string)
		if token == "" {
			break
		}
		e.Do("POST", "/users", key, map[string]any{"email": fmt.Sprintf("late%d@x.test", i), "name": "L"}).Must(t, http.StatusOK)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("user %s seen %d times", id, n)
		}
	}
	if len(seen) < 7 {
		t.Fatalf("saw %d users, want all 7 that existed before paging", len(seen))
	}
}

func TestUserLifecycle(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	owner := tn.Keys[tenancy.RoleOwner]
	ownerID := tn.Users[tenancy.RoleOwner].ID

	r := e.Do("POST", "/users", owner, `{"email":"teacher@`+tn.Org.ID+`.test","name":"Dup"}`).Must(t, http.StatusConflict)
	if r.Reason() != "EMAIL_TAKEN" {
		t.Fatalf("duplicate email: %s", r.Raw)
	}
	e.Do("POST", "/users", owner, `{"email":"not-an-email","name":"X"}`).Must(t, http.StatusBadRequest)
	e.Do("POST", "/users", owner, `{"email":"x@x.test","name":"X","role":"king"}`).Must(t, http.StatusBadRequest)

	// The last owner can be neither demoted nor deleted.
	r = e.Do("PATCH", "/users/"+ownerID, owner, `{"role":"admin"}`).Must(t, http.StatusConflict)
	if r.Reason() != "LAST_OWNER" {
		t.Fatalf("demoting last owner: %s", r.Raw)
	}
	e.Do("DELETE", "/users/"+ownerID, owner, nil).Must(t, http.StatusConflict)

	me := e.Do("PATCH", "/me", tn.Keys[tenancy.RoleStudent], `{"name":"Renamed"}`).Must(t, http.StatusOK)
	if me.Body["name"] != "Renamed" {
		t.Fatalf("PATCH /me = %s", me.Raw)
	}

	// Deleting a user removes it and its keys at once.
	student := tn.Users[tenancy.RoleStudent].ID
	e.Do("DELETE", "/users/"+student, owner, nil).Must(t, http.StatusOK)
	e.Do("GET", "/users/"+student, owner, nil).Must(t, http.StatusNotFound)
	e.Do("GET", "/me", tn.Keys[tenancy.RoleStudent], nil).Must(t, http.StatusUnauthorized)

	// A role change applies to the user's existing keys immediately.
	teacher := tn.Users[tenancy.RoleTeacher].ID
	e.Do("GET", "/users", tn.Keys[tenancy.RoleTeacher], nil).Must(t, http.StatusOK)
	e.Do("PATCH", "/users/"+teacher, owner, `{"role":"student"}`).Must(t, http.StatusOK)
	e.Do("GET", "/users", tn.Keys[tenancy.RoleTeacher], nil).Must(t, http.StatusForbidden)
}

func TestBadInputIsA4xxNamingTheField(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	key := tn.Keys[tenancy.RoleOwner]
	tests := []struct {
		name, method, path string
		body               any
		status             int
		field              string
	}{
		{"unknown field", "POST", "/users", `{"email":"a@x.test","name":"A","nickname":"a"}`, 400, "nickname"},
		{"wrong type", "POST", "/users", `{"email":5,"name":"A"}`, 400, "email"},
		{"malformed JSON", "POST", "/users", `{"email":`, 400, ""},
		{"missing email", "POST", "/users", `{"name":"A"}`, 400, "email"},
		{"malformed id", "GET", "/users/usr_nope", nil, 400, "id"},
		{"foreign prefix", "GET", "/users/org_01ARZ3NDEKTSV4RRFFQ69G5FAV", nil, 400, "id"},
		{"page size", "GET", "/users?pageSize=500", nil, 400, "pageSize"},
		{"bad role filter", "GET", "/users?role=king", nil, 400, "role"},
		{"body on GET", "GET", "/users", `{"x":1}`, 400, ""},
		{"huge body", "POST", "/users", `{"name":"` + strings.Repeat("a", 1<<20) + `"}`, 413, ""},
		{"unknown route", "GET", "/nowhere", nil, 404, ""},
		{"bad time", "GET", "/audit-logs?since=yesterday", nil, 400, "since"},
		{"non-numeric page size", "GET", "/users?pageSize=ten", nil, 400, "pageSize"},
		{"NUL in a filter", "GET", "/users?email=a%00", nil, 400, "email"},
		{"invalid UTF-8 in a path id", "GET", "/users/usr_%FF", nil, 400, "id"},
		{"NUL in metadata", "POST", "/users", `{"email":"n@x.test","name":"N","metadata":{"a":{"b":"\u0000"}}}`, 400, "metadata.a.b"},
		{"empty body", "POST", "/users", "", 400, "email"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.Do(tt.method, tt.path, key, tt.body).Must(t, tt.status)
			if _, ok := r.Body["code"].(float64); !ok || r.Body["message"] == "" {
				t.Fatalf("body %s is not a google.rpc.Status", r.Raw)
			}
			if r.Field() != tt.field {
				t.Fatalf("field violation %q, want %q; body %s", r.Field(), tt.field, r.Raw)
			}
		})
	}
	// An out-of-range and a non-numeric page size read alike.
	for _, size := range []string{"500", "ten"} {
		r := e.Do("GET", "/users?pageSize="+size, key, nil).Must(t, http.StatusBadRequest)
		if msg, _ := r.Body["message"].(string); r.Reason() != "INVALID_PAGE_SIZE" || !strings.Contains(msg, "between 1 and 200") {
			t.Errorf("pageSize=%s: %s", size, r.Raw)
		}
	}
}

func TestRemovedAndUnknownMethods(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	for _, req := range []struct{ method, path string }{{"POST", "/me"}, {"PUT", "/users"}, {"POST", "/users/usr_01ARZ3NDEKTSV4RRFFQ69G5FAV"}} {
		r := e.Do(req.method, req.path, tn.Keys[tenancy.RoleOwner], `{}`)
		if r.Status != http.StatusMethodNotAllowed {
			t.Fatalf("%s %s = %d %s", req.method, req.path, r.Status, r.Raw)
		}
		if r.Body["code"] != float64(12) || r.Reason() != "METHOD_NOT_ALLOWED" || r.Header.Get("Allow") == "" {
			t.Fatalf("%s %s: body %s, Allow %q", req.method, req.path, r.Raw, r.Header.Get("Allow"))
		}
	}
}
