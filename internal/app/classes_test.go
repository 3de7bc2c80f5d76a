package app_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

// TestClassesAPI manages classes and rosters over HTTP: a teacher creates
// a class and teaches it, hosts find it by externalId, another teacher and
// another organization find nothing, students are refused, bad input is a
// 400 naming the field, duplicates a 409, and every change is audited.
func TestClassesAPI(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", tenancy.PlanPro)
	other := e.NewTenant("FR", tenancy.PlanPro)
	owner, teacher, student := tn.Keys[tenancy.RoleOwner], tn.Keys[tenancy.RoleTeacher], tn.Keys[tenancy.RoleStudent]
	teacherID, studentID := tn.Users[tenancy.RoleTeacher].ID, tn.Users[tenancy.RoleStudent].ID
	teacher2, teacher2ID := newUserKey(e, tn, "teacher2", tenancy.RoleTeacher)

	created := e.Do("POST", "/classes", teacher, map[string]any{"name": "7B Maths", "externalId": "sis-7b"}).Must(t, http.StatusOK).Body
	id := apptest.Str(created, "id")
	if !strings.HasPrefix(id, "cls_") || created["name"] != "7B Maths" || created["externalId"] != "sis-7b" || apptest.Num(created, "memberCount") != 1 ||
		apptest.Str(created, "createdAt") == "" || apptest.Str(created, "updatedAt") == "" {
		t.Fatalf("created %v", created)
	}
	e.Do("POST", "/classes", owner, map[string]any{"name": "7C"}).Must(t, http.StatusOK)

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
		if r := e.Do("POST", "/classes", owner, bad.body).Must(t, http.StatusBadRequest); r.Field() != bad.field {
			t.Errorf("POST /classes %v: field %q, want %q: %s", bad.body, r.Field(), bad.field, r.Raw)
		}
	}
	if r := e.Do("PATCH", "/classes/"+id, owner, map[string]any{"name": ""}).Must(t, http.StatusBadRequest); r.Field() != "name" {
		t.Errorf("PATCH to an empty name: field %q", r.Field())
	}
	if r := e.Do("POST", "/classes", owner, map[string]any{"name": "Again", "externalId": "sis-7b"}).Must(t, http.StatusConflict); r.Reason() != "EXTERNAL_ID_TAKEN" ||
		!strings.Contains(apptest.Str(r.Body, "message"), "externalId") {
		t.Errorf("a duplicate externalId: %s", r.Raw)
	}

	// Hosts look classes up by their own key.
	if list := apptest.Items(e.Do("GET", "/classes?externalId=sis-7b", owner, nil).Must(t, http.StatusOK).Body, "classes"); len(list) != 1 || list[0]["id"] != id {
		t.Fatalf("by externalId: %v", list)
	}
	if list := apptest.Items(e.Do("GET", "/classes?externalId=nope", owner, nil).Must(t, http.StatusOK).Body, "classes"); len(list) != 0 {
		t.Fatalf("by an unknown externalId: %v", list)
	}
	page := e.Do("GET", "/classes?pageSize=1", owner, nil).Must(t, http.StatusOK).Body
	if len(apptest.Items(page, "classes")) != 1 || apptest.Str(page, "nextPageToken") == "" {
		t.Fatalf("a page of 1: %v", page)
	}
	rest := e.Do("GET", "/classes?pageSize=1&pageToken="+apptest.Str(page, "nextPageToken"), owner, nil).Must(t, http.StatusOK).Body
	if l := apptest.Items(rest, "classes"); len(l) != 1 || l[0]["id"] == apptest.Items(page, "classes")[0]["id"] || apptest.Str(rest, "nextPageToken") != "" {
		t.Fatalf("the second page: %v", rest)
	}
	if list := apptest.Items(e.Do("GET", "/classes", teacher2, nil).Must(t, http.StatusOK).Body, "classes"); len(list) != 0 {
		t.Fatalf("another teacher lists %v", list)
	}

	// Members: added, listed with names and emails, role changed, removed.
	m := e.Do("POST", "/classes/"+id+"/members", teacher, map[string]any{"userId": studentID, "role": "student"}).Must(t, http.StatusOK).Body
	if m["userId"] != studentID || m["role"] != "student" || m["name"] != "student" || m["email"] != tn.Users[tenancy.RoleStudent].Email || apptest.Str(m, "addedAt") == "" {
		t.Fatalf("added %v", m)
	}
	if r := e.Do("POST", "/classes/"+id+"/members", teacher, map[string]any{"userId": studentID, "role": "teacher"}).Must(t, http.StatusBadRequest); r.Field() != "role" {
		t.Errorf("a student as teacher: field %q", r.Field())
	}
	if r := e.Do("POST", "/classes/"+id+"/members", teacher, map[string]any{"userId": other.Users[tenancy.RoleStudent].ID, "role": "student"}).Must(t, http.StatusNotFound); r.Reason() != "USER_NOT_FOUND" {
		t.Errorf("another organization's user: %s", r.Raw)
	}
	if r := e.Do("POST", "/classes/"+id+"/members", teacher, map[string]any{"userId": "nobody", "role": "student"}).Must(t, http.StatusBadRequest); r.Field() != "userId" {
		t.Errorf("a malformed user id: field %q", r.Field())
	}
	e.Do("POST", "/classes/"+id+"/members", teacher, map[string]any{"userId": teacher2ID, "role": "student"}).Must(t, http.StatusOK)
	e.Do("GET", "/classes/"+id, teacher2, nil).Must(t, http.StatusNotFound) // a class's student is not its teacher
	if again := e.Do("POST", "/classes/"+id+"/members", teacher, map[string]any{"userId": teacher2ID, "role": "teacher"}).Must(t, http.StatusOK).Body; again["role"] != "teacher" {
		t.Fatalf("the role changed to %v", again)
	}
	members := apptest.Items(e.Do("GET", "/classes/"+id+"/members", teacher2, nil).Must(t, http.StatusOK).Body, "members")
	var roster []string
	for _, m := range members {
		roster = append(roster, apptest.Str(m, "userId")+" "+apptest.Str(m, "role"))
	}
	want := []string{studentID + " student", teacherID + " teacher", teacher2ID + " teacher"}
	slices.Sort(want)
	if !slices.Equal(roster, want) {
		t.Fatalf("roster %v, want %v", roster, want)
	}
	if l := apptest.Items(e.Do("GET", "/classes/"+id+"/members?role=student", owner, nil).Must(t, http.StatusOK).Body, "members"); len(l) != 1 || l[0]["userId"] != studentID {
		t.Fatalf("students %v", l)
	}
	e.Do("GET", "/classes/"+id+"/members?role=janitor", owner, nil).Must(t, http.StatusBadRequest)
	e.Do("DELETE", "/classes/"+id+"/members/"+studentID, teacher2, nil).Must(t, http.StatusOK)
	if r := e.Do("DELETE", "/classes/"+id+"/members/"+studentID, teacher2, nil).Must(t, http.StatusNotFound); r.Reason() != "CLASS_MEMBER_NOT_FOUND" {
		t.Errorf("removed twice: %s", r.Raw)
	}

	// PATCH changes what is sent; an empty externalId removes it.
	patched := e.Do("PATCH", "/classes/"+id, teacher, map[string]any{"name": "7B Algebra"}).Must(t, http.StatusOK).Body
	if patched["name"] != "7B Algebra" || patched["externalId"] != "sis-7b" || apptest.Num(patched, "memberCount") != 2 {
		t.Fatalf("patched %v", patched)
	}
	if patched = e.Do("PATCH", "/classes/"+id, teacher, map[string]any{"externalId": ""}).Must(t, http.StatusOK).Body; patched["externalId"] != "" {
		t.Fatalf("externalId removed: %v", patched)
	}

	// Another organization, and students, get nothing.
	for _, path := range []string{"/classes/" + id, "/classes/" + id + "/members"} {
		e.Do("GET", path, other.Keys[tenancy.RoleOwner], nil).Must(t, http.StatusNotFound)
	}
	e.Do("DELETE", "/classes/"+id, other.Keys[tenancy.RoleOwner], nil).Must(t, http.StatusNotFound)
	for _, call := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/classes", nil}, {"POST", "/classes", map[string]any{"name": "Mine"}}, {"GET", "/classes/" + id, nil},
		{"PATCH", "/classes/" + id, map[string]any{"name": "Mine"}}, {"DELETE", "/classes/" + id, nil},
		{"GET", "/classes/" + id + "/members", nil}, {"POST", "/classes/" + id + "/members", map[string]any{"userId": studentID, "role": "student"}},
		{"DELETE", "/classes/" + id + "/members/" + teacherID, nil},
	} {
		if r := e.Do(call.method, call.path, student, call.body).Must(t, http.StatusForbidden); r.Reason() != "INSUFFICIENT_SCOPE" {
			t.Errorf("a student's %s %s: %s", call.method, call.path, r.Raw)
		}
	}

	e.Do("DELETE", "/classes/"+id, teacher, nil).Must(t, http.StatusOK)
	e.Do("GET", "/classes/"+id, owner, nil).Must(t, http.StatusNotFound)

	var actions []string
	for _, a := range apptest.Items(e.Do("GET", "/audit-logs?targetId="+id, owner, nil).Must(t, http.StatusOK).Body, "auditLogs") {
		actions = append(actions, apptest.Str(a, "action"))
	}
	slices.Sort(actions)
	if want := []string{"class.created", "class.deleted", "class.member_added", "class.member_added", "class.member_added",
		"class.member_removed", "class.updated", "class.updated"}; !slices.Equal(actions, want) {
		t.Fatalf("audit actions %v, want %v", actions, want)
	}
}

// newUserKey adds a user with role to tn and returns an API key of theirs
// and their id.
func newUserKey(e *env, tn tenant, name string, role tenancy.Role) (key, id string) {
	e.T.Helper()
	ctx := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.Org.ID))
	u, err := e.App.Tenancy.CreateUser(ctx, tenancy.NewUser{Email: name + "@" + tn.Org.ID + ".test", Name: name, Role: role})
	if err != nil {
		e.T.Fatal(err)
	}
	_, key, err = e.App.Tenancy.CreateAPIKey(ctx, u.ID, "test")
	if err != nil {
		e.T.Fatal(err)
	}
	return key, u.ID
}
