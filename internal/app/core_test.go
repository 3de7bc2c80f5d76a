package app_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/assessd/assessd/tenancy"
)

func TestAuthentication(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("DE", "pro")
	key := tn.keys[tenancy.RoleOwner]

	for name, auth := range map[string]string{
		"missing":   "",
		"malformed": "ak_not-a-key",
		"unknown":   "ak_01ARZ3NDEKTSV4RRFFQ69G5FAV_" + strings.Repeat("x", 43),
		"tampered":  key[:len(key)-2] + "xx",
	} {
		r := e.do("GET", "/me", auth, nil).must(t, http.StatusUnauthorized)
		if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: WWW-Authenticate = %q", name, r.header.Get("WWW-Authenticate"))
		}
		if r.body["code"] != float64(16) || r.reason() != "UNAUTHENTICATED" {
			t.Errorf("%s: body %s is not a google.rpc.Status UNAUTHENTICATED", name, r.raw)
		}
	}

	me := e.do("GET", "/me", key, nil).must(t, http.StatusOK)
	if me.body["id"] != tn.users[tenancy.RoleOwner].ID {
		t.Fatalf("GET /me = %s", me.raw)
	}

	// Revocation applies on the very next request.
	ctx := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.org.ID))
	// Uses are written in the background; flushing now makes the write
	// happen before the read.
	if err := e.app.Tenancy.FlushKeyUses(ctx); err != nil {
		t.Fatal(err)
	}
	keys, err := e.app.Tenancy.ListAPIKeys(ctx, tn.users[tenancy.RoleOwner].ID)
	if err != nil || len(keys) != 1 {
		t.Fatalf("ListAPIKeys = %v, %v", keys, err)
	}
	if keys[0].LastUsedAt == nil {
		t.Error("last_used_at was not recorded")
	}
	if err := e.app.Tenancy.RevokeAPIKey(ctx, keys[0].ID); err != nil {
		t.Fatal(err)
	}
	e.do("GET", "/me", key, nil).must(t, http.StatusUnauthorized)
}

func TestFailedAuthenticationsAreRateLimited(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "free")
	owner := tn.keys[tenancy.RoleOwner]
	// Guesses at the owner's key: its id with wrong secrets.
	guess := owner[:strings.LastIndex(owner, "_")+1] + "wrong"
	// 20 failures at once, then 10 a minute.
	last := throttled(t, 20, 10, func() response { return e.do("GET", "/me", guess, nil) })
	if last.header.Get("Retry-After") == "" || last.reason() != "TOO_MANY_FAILED_AUTHENTICATIONS" {
		t.Errorf("429 without Retry-After or reason: %v %s", last.header, last.raw)
	}
	// The limit is on failures from the address with that key: even the
	// right secret waits, so guessing learns nothing more...
	e.do("GET", "/me", owner, nil).must(t, http.StatusTooManyRequests)
	// ...while other credentials from the same address are not locked out.
	e.do("GET", "/me", tn.keys[tenancy.RoleTeacher], nil).must(t, http.StatusOK)
	throttled(t, 20, 10, func() response { return e.do("GET", "/me", "ak_guess", nil) })
	e.do("GET", "/me", tn.keys[tenancy.RoleAdmin], nil).must(t, http.StatusOK)
}

func TestScopesAndRoles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	r := e.do("GET", "/users", tn.keys[tenancy.RoleStudent], nil).must(t, http.StatusForbidden)
	if r.reason() != "INSUFFICIENT_SCOPE" || !strings.Contains(r.header.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
		t.Fatalf("student listing users: %s, WWW-Authenticate %q", r.raw, r.header.Get("WWW-Authenticate"))
	}
	e.do("GET", "/users", tn.keys[tenancy.RoleTeacher], nil).must(t, http.StatusOK)
	r = e.do("POST", "/users", tn.keys[tenancy.RoleTeacher], map[string]any{"email": "n@x.test", "name": "N"}).must(t, http.StatusForbidden)
	if r.reason() != "INSUFFICIENT_SCOPE" {
		t.Fatalf("teacher creating a user: %s", r.raw)
	}
	r = e.do("POST", "/users", tn.keys[tenancy.RoleAdmin], map[string]any{"email": "o@x.test", "name": "O", "role": "owner"}).must(t, http.StatusForbidden)
	if r.reason() != "ROLE_NOT_ALLOWED" {
		t.Fatalf("admin creating an owner: %s", r.raw)
	}
	e.do("GET", "/me", tn.keys[tenancy.RoleStudent], nil).must(t, http.StatusOK)
	e.do("GET", "/org", tn.keys[tenancy.RoleStudent], nil).must(t, http.StatusOK)
	e.do("GET", "/audit-logs", tn.keys[tenancy.RoleTeacher], nil).must(t, http.StatusForbidden)
}

func TestForeignIDsAreNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := e.newTenant("DE", "pro"), e.newTenant("FR", "pro")
	keyA := a.keys[tenancy.RoleOwner]
	foreign := b.users[tenancy.RoleStudent].ID

	for _, req := range []struct{ method, body string }{{"GET", ""}, {"PATCH", `{"name":"x"}`}, {"DELETE", ""}} {
		var body any
		if req.body != "" {
			body = req.body
		}
		r := e.do(req.method, "/users/"+foreign, keyA, body).must(t, http.StatusNotFound)
		if r.reason() != "USER_NOT_FOUND" {
			t.Errorf("%s foreign user: %s", req.method, r.raw)
		}
	}
	list := e.do("GET", "/users?pageSize=200", keyA, nil).must(t, http.StatusOK)
	for _, u := range list.body["users"].([]any) {
		if u.(map[string]any)["orgId"] != a.org.ID {
			t.Fatalf("org A's list contains %v", u)
		}
	}
	if got := e.do("GET", "/users/"+foreign, b.keys[tenancy.RoleOwner], nil).must(t, http.StatusOK).body["name"]; got != "student" {
		t.Fatalf("org B could not read its own user after org A's attempts: %v", got)
	}
}

func TestUserMetadata(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	key := tn.keys[tenancy.RoleAdmin]

	r := e.do("POST", "/users", key, `{"email":"m@x.test","name":"M","metadata":{"address":{"city":"Oslo"}}}`).must(t, http.StatusBadRequest)
	if r.field() != "metadata.address" || !strings.Contains(r.body["message"].(string), "metadata.address") {
		t.Fatalf("nested metadata: %s", r.raw)
	}
	e.do("POST", "/users", key, `{"email":"m@x.test","name":"M","metadata":{"tags":["a"]}}`).must(t, http.StatusBadRequest)

	u := e.do("POST", "/users", key, `{"email":"m@x.test","name":"M","metadata":{"grade":"7","score":9.5,"active":true}}`).must(t, http.StatusOK)
	id := u.body["id"].(string)
	u = e.do("PATCH", "/users/"+id, key, `{"metadata":{"grade":"8","score":null,"team":"red"}}`).must(t, http.StatusOK)
	want := map[string]any{"grade": "8", "active": true, "team": "red"}
	checkMetadata := func(where string, got any) {
		t.Helper()
		m, _ := got.(map[string]any)
		if fmt.Sprint(m) != fmt.Sprint(want) {
			t.Fatalf("%s metadata = %v, want %v", where, m, want)
		}
	}
	checkMetadata("PATCH", u.body["metadata"])
	checkMetadata("GET", e.do("GET", "/users/"+id, key, nil).must(t, http.StatusOK).body["metadata"])
	list := e.do("GET", "/users?email=m@x.test", key, nil).must(t, http.StatusOK)
	checkMetadata("list", list.body["users"].([]any)[0].(map[string]any)["metadata"])

	// A PATCH without metadata leaves it alone; an invalid one changes nothing.
	e.do("PATCH", "/users/"+id, key, `{"name":"Em"}`).must(t, http.StatusOK)
	e.do("PATCH", "/users/"+id, key, `{"metadata":{"grade":"9","bad":[1]}}`).must(t, http.StatusBadRequest)
	checkMetadata("after rejected PATCH", e.do("GET", "/users/"+id, key, nil).body["metadata"])

	many := map[string]any{}
	for i := range tenancy.MaxMetadataKeys {
		many[fmt.Sprintf("k%d", i)] = i
	}
	r = e.do("PATCH", "/users/"+id, key, map[string]any{"metadata": many}).must(t, http.StatusBadRequest)
	if r.field() != "metadata" {
		t.Fatalf("too many keys: %s", r.raw)
	}
}

func TestAIRegion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	eu, us, free := e.newTenant("NO", "pro"), e.newTenant("US", "enterprise"), e.newTenant("DE", "free")
	if eu.org.AIRegion != "eu" || us.org.AIRegion != "global" || free.org.AIRegion != "eu" {
		t.Fatalf("defaults: NO=%s US=%s DE=%s", eu.org.AIRegion, us.org.AIRegion, free.org.AIRegion)
	}
	patch := `{"settings":{"aiRegion":"global"}}`

	r := e.do("PATCH", "/org", eu.keys[tenancy.RoleTeacher], patch).must(t, http.StatusForbidden)
	if r.reason() != "INSUFFICIENT_SCOPE" {
		t.Fatalf("teacher: %s", r.raw)
	}
	r = e.do("PATCH", "/org", free.keys[tenancy.RoleOwner], patch).must(t, http.StatusForbidden)
	if r.reason() != "PLAN_FEATURE_UNAVAILABLE" {
		t.Fatalf("free plan: %s", r.raw)
	}
	// Setting the value the org already has is not a change, on any plan.
	e.do("PATCH", "/org", free.keys[tenancy.RoleOwner], `{"settings":{"aiRegion":"eu"}}`).must(t, http.StatusOK)
	r = e.do("PATCH", "/org", eu.keys[tenancy.RoleAdmin], `{"settings":{"aiRegion":"mars"}}`).must(t, http.StatusBadRequest)
	if r.field() != "settings.aiRegion" {
		t.Fatalf("invalid region: %s", r.raw)
	}

	org := e.do("PATCH", "/org", eu.keys[tenancy.RoleAdmin], patch).must(t, http.StatusOK)
	if org.body["settings"].(map[string]any)["aiRegion"] != "global" {
		t.Fatalf("PATCH /org = %s", org.raw)
	}
	if got := e.do("GET", "/org", eu.keys[tenancy.RoleStudent], nil).body["settings"].(map[string]any)["aiRegion"]; got != "global" {
		t.Fatalf("GET /org after change: aiRegion %v", got)
	}
	e.do("PATCH", "/org", eu.keys[tenancy.RoleAdmin], patch).must(t, http.StatusOK) // no change: no entry

	logs := e.do("GET", "/audit-logs?action=org.ai_region_changed", eu.keys[tenancy.RoleOwner], nil).must(t, http.StatusOK)
	entries := logs.body["auditLogs"].([]any)
	if len(entries) != 1 {
		t.Fatalf("want exactly 1 org.ai_region_changed entry, got %s", logs.raw)
	}
	entry := entries[0].(map[string]any)
	before := entry["before"].(map[string]any)["settings"].(map[string]any)["aiRegion"]
	after := entry["after"].(map[string]any)["settings"].(map[string]any)["aiRegion"]
	actor := entry["actor"].(map[string]any)
	if before != "eu" || after != "global" || actor["id"] != eu.users[tenancy.RoleAdmin].ID || entry["origin"] != "platform" {
		t.Fatalf("audit entry = %v", entry)
	}
	for _, other := range []tenant{us, free} {
		if n := len(e.do("GET", "/audit-logs?action=org.ai_region_changed", other.keys[tenancy.RoleOwner], nil).body["auditLogs"].([]any)); n != 0 {
			t.Fatalf("another organization sees %d region changes", n)
		}
	}
}

func TestAuditLogs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	owner := tn.keys[tenancy.RoleOwner]

	r := e.do("POST", "/audit-logs", owner, `{"action":"exam.exported","target":{"type":"exam","id":"exm_1"}}`).must(t, http.StatusForbidden)
	if r.reason() != "CALLER_KIND_NOT_ALLOWED" {
		t.Fatalf("API key writing the audit log: %s", r.raw)
	}

	// Setup wrote org.created, 4x user.created and 4x api_key.created.
	all := e.do("GET", "/audit-logs", owner, nil).must(t, http.StatusOK).body["auditLogs"].([]any)
	if len(all) != 9 {
		t.Fatalf("got %d entries, want 9", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].(map[string]any)["id"].(string) < all[i].(map[string]any)["id"].(string) {
			t.Fatal("entries are not newest first")
		}
	}
	users := e.do("GET", "/audit-logs?action=user.created&targetType=user", owner, nil).must(t, http.StatusOK).body["auditLogs"].([]any)
	if len(users) != 4 {
		t.Fatalf("action filter: %d entries", len(users))
	}
	student := tn.users[tenancy.RoleStudent].ID
	byTarget := e.do("GET", "/audit-logs?targetId="+student, owner, nil).must(t, http.StatusOK).body["auditLogs"].([]any)
	if len(byTarget) != 1 || byTarget[0].(map[string]any)["target"].(map[string]any)["id"] != student {
		t.Fatalf("target filter: %v", byTarget)
	}
	if n := len(e.do("GET", "/audit-logs?until=2000-01-01T00:00:00Z", owner, nil).must(t, http.StatusOK).body["auditLogs"].([]any)); n != 0 {
		t.Fatalf("until filter returned %d old entries", n)
	}
	if n := len(e.do("GET", "/audit-logs?since=2000-01-01T00:00:00Z&actorId=cli", owner, nil).must(t, http.StatusOK).body["auditLogs"].([]any)); n != 9 {
		t.Fatalf("since+actor filter returned %d entries", n)
	}
	e.do("GET", "/audit-logs?since=2030-01-01T00:00:00Z&until=2020-01-01T00:00:00Z", owner, nil).must(t, http.StatusBadRequest)

	// Pages of 4 walk all 9 entries exactly once.
	seen := map[string]bool{}
	token := ""
	for page := 0; ; page++ {
		r := e.do("GET", "/audit-logs?pageSize=4&pageToken="+token, owner, nil).must(t, http.StatusOK)
		for _, en := range r.body["auditLogs"].([]any) {
			seen[en.(map[string]any)["id"].(string)] = true
		}
		token, _ = r.body["nextPageToken"].(string)
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
	e.do("GET", "/audit-logs?pageToken=garbage", owner, nil).must(t, http.StatusBadRequest)
}

func TestUserPaginationIsStableUnderInserts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	key := tn.keys[tenancy.RoleAdmin]
	for i := range 3 {
		e.do("POST", "/users", key, map[string]any{"email": fmt.Sprintf("p%d@x.test", i), "name": "P"}).must(t, http.StatusOK)
	}
	// 7 users now; read 3 per page and insert a user between pages.
	seen := map[string]int{}
	token := ""
	for i := 0; ; i++ {
		r := e.do("GET", "/users?pageSize=3&pageToken="+token, key, nil).must(t, http.StatusOK)
		for _, u := range r.body["users"].([]any) {
			seen[u.(map[string]any)["id"].(string)]++
		}
		token, _ = r.body["nextPageToken"].(string)
		if token == "" {
			break
		}
		e.do("POST", "/users", key, map[string]any{"email": fmt.Sprintf("late%d@x.test", i), "name": "L"}).must(t, http.StatusOK)
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
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	owner := tn.keys[tenancy.RoleOwner]
	ownerID := tn.users[tenancy.RoleOwner].ID

	r := e.do("POST", "/users", owner, `{"email":"teacher@`+tn.org.ID+`.test","name":"Dup"}`).must(t, http.StatusConflict)
	if r.reason() != "EMAIL_TAKEN" {
		t.Fatalf("duplicate email: %s", r.raw)
	}
	e.do("POST", "/users", owner, `{"email":"not-an-email","name":"X"}`).must(t, http.StatusBadRequest)
	e.do("POST", "/users", owner, `{"email":"x@x.test","name":"X","role":"king"}`).must(t, http.StatusBadRequest)

	// The last owner can be neither demoted nor deleted.
	r = e.do("PATCH", "/users/"+ownerID, owner, `{"role":"admin"}`).must(t, http.StatusConflict)
	if r.reason() != "LAST_OWNER" {
		t.Fatalf("demoting last owner: %s", r.raw)
	}
	e.do("DELETE", "/users/"+ownerID, owner, nil).must(t, http.StatusConflict)

	me := e.do("PATCH", "/me", tn.keys[tenancy.RoleStudent], `{"name":"Renamed"}`).must(t, http.StatusOK)
	if me.body["name"] != "Renamed" {
		t.Fatalf("PATCH /me = %s", me.raw)
	}

	// Deleting a user removes it and its keys at once.
	student := tn.users[tenancy.RoleStudent].ID
	e.do("DELETE", "/users/"+student, owner, nil).must(t, http.StatusOK)
	e.do("GET", "/users/"+student, owner, nil).must(t, http.StatusNotFound)
	e.do("GET", "/me", tn.keys[tenancy.RoleStudent], nil).must(t, http.StatusUnauthorized)

	// A role change applies to the user's existing keys immediately.
	teacher := tn.users[tenancy.RoleTeacher].ID
	e.do("GET", "/users", tn.keys[tenancy.RoleTeacher], nil).must(t, http.StatusOK)
	e.do("PATCH", "/users/"+teacher, owner, `{"role":"student"}`).must(t, http.StatusOK)
	e.do("GET", "/users", tn.keys[tenancy.RoleTeacher], nil).must(t, http.StatusForbidden)
}

func TestBadInputIsA4xxNamingTheField(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	key := tn.keys[tenancy.RoleOwner]
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
			r := e.do(tt.method, tt.path, key, tt.body).must(t, tt.status)
			if _, ok := r.body["code"].(float64); !ok || r.body["message"] == "" {
				t.Fatalf("body %s is not a google.rpc.Status", r.raw)
			}
			if r.field() != tt.field {
				t.Fatalf("field violation %q, want %q; body %s", r.field(), tt.field, r.raw)
			}
		})
	}
	// An out-of-range and a non-numeric page size read alike.
	for _, size := range []string{"500", "ten"} {
		r := e.do("GET", "/users?pageSize="+size, key, nil).must(t, http.StatusBadRequest)
		if msg, _ := r.body["message"].(string); r.reason() != "INVALID_PAGE_SIZE" || !strings.Contains(msg, "between 1 and 200") {
			t.Errorf("pageSize=%s: %s", size, r.raw)
		}
	}
}

func TestRemovedAndUnknownMethods(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	for _, req := range []struct{ method, path string }{{"POST", "/me"}, {"PUT", "/users"}, {"POST", "/users/usr_01ARZ3NDEKTSV4RRFFQ69G5FAV"}} {
		r := e.do(req.method, req.path, tn.keys[tenancy.RoleOwner], `{}`)
		if r.status != http.StatusMethodNotAllowed {
			t.Fatalf("%s %s = %d %s", req.method, req.path, r.status, r.raw)
		}
		if r.body["code"] != float64(12) || r.reason() != "METHOD_NOT_ALLOWED" || r.header.Get("Allow") == "" {
			t.Fatalf("%s %s: body %s, Allow %q", req.method, req.path, r.raw, r.header.Get("Allow"))
		}
	}
}
