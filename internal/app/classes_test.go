package app_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/assessd/assessd/tenancy"
)

// TestClassesAPI manages classes and rosters over HTTP: a teacher creates
// a class and teaches it, hosts find it by externalId, another teacher and
// another organization find nothing, students are refused, bad input is a
// 400 naming the field, duplicates a 409, and every change is audited.
func TestClassesAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", tenancy.PlanPro)
	other := e.newTenant("FR", tenancy.PlanPro)
	owner, teacher, student := tn.keys[tenancy.RoleOwner], tn.keys[tenancy.RoleTeacher], tn.keys[tenancy.RoleStudent]
	teacherID, studentID := tn.users[tenancy.RoleTeacher].ID, tn.users[tenancy.RoleStudent].ID
	teacher2, teacher2ID := e.newUserKey(tn, "teacher2", tenancy.RoleTeacher)

	created := e.do("POST", "/classes", teacher, map[string]any{"name": "7B Maths", "externalId": "sis-7b"}).must(t, http.StatusOK).body
	id := str(created, "id")
	if !strings.HasPrefix(id, "cls_") || created["name"] != "7B Maths" || created["externalId"] != "sis-7b" || num(created, "memberCount") != 1 ||
		str(created, "createdAt") == "" || str(created, "updatedAt") == "" {
		t.Fatalf("created %v", created)
	}
	e.do("POST", "/classes", owner, map[string]any{"name": "7C"}).must(t, http.StatusOK)

	// Bad input and duplicates.
	for _, bad := range []struct {
		body  any
		field string
	}{
		{map[string]any{"name": ""}, "name"},
		{map[string]any{"name": "   "}, "name"},
		{map[string]any{"name": strings.Repeat("x", 201)}, "name"},
		{map[string]any{"name": "x", "externalId": strings.Repeat("k", 201)}, "externalId"},
		{map[string]any{"name": "x", "externalId": "sis-7b "}, "externalId"},
		{map[string]any{"name": "x", "teacherId": teacherID}, "teacherId"},
		{map[string]any{"name": 7}, "name"},
	} {
		if r := e.do("POST", "/classes", owner, bad.body).must(t, http.StatusBadRequest); r.field() != bad.field {
			t.Errorf("POST /classes %v: field %q, want %q: %s", bad.body, r.field(), bad.field, r.raw)
		}
	}
	if r := e.do("PATCH", "/classes/"+id, owner, map[string]any{"name": ""}).must(t, http.StatusBadRequest); r.field() != "name" {
		t.Errorf("PATCH to an empty name: field %q", r.field())
	}
	if r := e.do("POST", "/classes", owner, map[string]any{"name": "Again", "externalId": "sis-7b"}).must(t, http.StatusConflict); r.reason() != "EXTERNAL_ID_TAKEN" ||
		!strings.Contains(str(r.body, "message"), "externalId") {
		t.Errorf("a duplicate externalId: %s", r.raw)
	}

	// Hosts look classes up by their own key.
	if list := items(e.do("GET", "/classes?externalId=sis-7b", owner, nil).must(t, http.StatusOK).body, "classes"); len(list) != 1 || list[0]["id"] != id {
		t.Fatalf("by externalId: %v", list)
	}
	if list := items(e.do("GET", "/classes?externalId=nope", owner, nil).must(t, http.StatusOK).body, "classes"); len(list) != 0 {
		t.Fatalf("by an unknown externalId: %v", list)
	}
	page := e.do("GET", "/classes?pageSize=1", owner, nil).must(t, http.StatusOK).body
	if len(items(page, "classes")) != 1 || str(page, "nextPageToken") == "" {
		t.Fatalf("a page of 1: %v", page)
	}
	rest := e.do("GET", "/classes?pageSize=1&pageToken="+str(page, "nextPageToken"), owner, nil).must(t, http.StatusOK).body
	if l := items(rest, "classes"); len(l) != 1 || l[0]["id"] == items(page, "classes")[0]["id"] || str(rest, "nextPageToken") != "" {
		t.Fatalf("the second page: %v", rest)
	}
	if list := items(e.do("GET", "/classes", teacher2, nil).must(t, http.StatusOK).body, "classes"); len(list) != 0 {
		t.Fatalf("another teacher lists %v", list)
	}

	// Members: added, listed with names and emails, role changed, removed.
	m := e.do("POST", "/classes/"+id+"/members", teacher, map[string]any{"userId": studentID, "role": "student"}).must(t, http.StatusOK).body
	if m["userId"] != studentID || m["role"] != "student" || m["name"] != "student" || m["email"] != tn.users[tenancy.RoleStudent].Email || str(m, "addedAt") == "" {
		t.Fatalf("added %v", m)
	}
	if r := e.do("POST", "/classes/"+id+"/members", teacher, map[string]any{"userId": studentID, "role": "teacher"}).must(t, http.StatusBadRequest); r.field() != "role" {
		t.Errorf("a student as teacher: field %q", r.field())
	}
	if r := e.do("POST", "/classes/"+id+"/members", teacher, map[string]any{"userId": other.users[tenancy.RoleStudent].ID, "role": "student"}).must(t, http.StatusNotFound); r.reason() != "USER_NOT_FOUND" {
		t.Errorf("another organization's user: %s", r.raw)
	}
	if r := e.do("POST", "/classes/"+id+"/members", teacher, map[string]any{"userId": "nobody", "role": "student"}).must(t, http.StatusBadRequest); r.field() != "userId" {
		t.Errorf("a malformed user id: field %q", r.field())
	}
	e.do("POST", "/classes/"+id+"/members", teacher, map[string]any{"userId": teacher2ID, "role": "student"}).must(t, http.StatusOK)
	e.do("GET", "/classes/"+id, teacher2, nil).must(t, http.StatusNotFound) // a class's student is not its teacher
	if again := e.do("POST", "/classes/"+id+"/members", teacher, map[string]any{"userId": teacher2ID, "role": "teacher"}).must(t, http.StatusOK).body; again["role"] != "teacher" {
		t.Fatalf("the role changed to %v", again)
	}
	members := items(e.do("GET", "/classes/"+id+"/members", teacher2, nil).must(t, http.StatusOK).body, "members")
	var roster []string
	for _, m := range members {
		roster = append(roster, str(m, "userId")+" "+str(m, "role"))
	}
	want := []string{studentID + " student", teacherID + " teacher", teacher2ID + " teacher"}
	slices.Sort(want)
	if !slices.Equal(roster, want) {
		t.Fatalf("roster %v, want %v", roster, want)
	}
	if l := items(e.do("GET", "/classes/"+id+"/members?role=student", owner, nil).must(t, http.StatusOK).body, "members"); len(l) != 1 || l[0]["userId"] != studentID {
		t.Fatalf("students %v", l)
	}
	e.do("GET", "/classes/"+id+"/members?role=janitor", owner, nil).must(t, http.StatusBadRequest)
	e.do("DELETE", "/classes/"+id+"/members/"+studentID, teacher2, nil).must(t, http.StatusOK)
	if r := e.do("DELETE", "/classes/"+id+"/members/"+studentID, teacher2, nil).must(t, http.StatusNotFound); r.reason() != "CLASS_MEMBER_NOT_FOUND" {
		t.Errorf("removed twice: %s", r.raw)
	}

	// PATCH changes what is sent; an empty externalId removes it.
	patched := e.do("PATCH", "/classes/"+id, teacher, map[string]any{"name": "7B Algebra"}).must(t, http.StatusOK).body
	if patched["name"] != "7B Algebra" || patched["externalId"] != "sis-7b" || num(patched, "memberCount") != 2 {
		t.Fatalf("patched %v", patched)
	}
	if patched = e.do("PATCH", "/classes/"+id, teacher, map[string]any{"externalId": ""}).must(t, http.StatusOK).body; patched["externalId"] != "" {
		t.Fatalf("externalId removed: %v", patched)
	}

	// Another organization, and students, get nothing.
	for _, path := range []string{"/classes/" + id, "/classes/" + id + "/members"} {
		e.do("GET", path, other.keys[tenancy.RoleOwner], nil).must(t, http.StatusNotFound)
	}
	e.do("DELETE", "/classes/"+id, other.keys[tenancy.RoleOwner], nil).must(t, http.StatusNotFound)
	for _, call := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/classes", nil}, {"POST", "/classes", map[string]any{"name": "Mine"}}, {"GET", "/classes/" + id, nil},
		{"PATCH", "/classes/" + id, map[string]any{"name": "Mine"}}, {"DELETE", "/classes/" + id, nil},
		{"GET", "/classes/" + id + "/members", nil}, {"POST", "/classes/" + id + "/members", map[string]any{"userId": studentID, "role": "student"}},
		{"DELETE", "/classes/" + id + "/members/" + teacherID, nil},
	} {
		if r := e.do(call.method, call.path, student, call.body).must(t, http.StatusForbidden); r.reason() != "INSUFFICIENT_SCOPE" {
			t.Errorf("a student's %s %s: %s", call.method, call.path, r.raw)
		}
	}

	e.do("DELETE", "/classes/"+id, teacher, nil).must(t, http.StatusOK)
	e.do("GET", "/classes/"+id, owner, nil).must(t, http.StatusNotFound)

	var actions []string
	for _, a := range items(e.do("GET", "/audit-logs?targetId="+id, owner, nil).must(t, http.StatusOK).body, "auditLogs") {
		actions = append(actions, str(a, "action"))
	}
	slices.Sort(actions)
	if want := []string{"class.created", "class.deleted", "class.member_added", "class.member_added", "class.member_added",
		"class.member_removed", "class.updated", "class.updated"}; !slices.Equal(actions, want) {
		t.Fatalf("audit actions %v, want %v", actions, want)
	}
}

// newUserKey adds a user with role to tn and returns an API key of theirs
// and their id.
func (e *env) newUserKey(tn tenant, name string, role tenancy.Role) (key, id string) {
	e.t.Helper()
	ctx := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.org.ID))
	u, err := e.app.Tenancy.CreateUser(ctx, tenancy.NewUser{Email: name + "@" + tn.org.ID + ".test", Name: name, Role: role})
	if err != nil {
		e.t.Fatal(err)
	}
	_, key, err = e.app.Tenancy.CreateAPIKey(ctx, u.ID, "test")
	if err != nil {
		e.t.Fatal(err)
	}
	return key, u.ID
}
