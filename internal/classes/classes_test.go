package classes_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/classes"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/tenancy"
)

func ptr[T any](v T) *T { return &v }

// TestClassLifecycle: an admin creates, finds by external id, renames and
// deletes a class; external ids are unique in the organization, names are
// required and bounded, and every change is audited.
func TestClassLifecycle(t *testing.T) {
	f := newFixture(t)
	admin := f.ctx("admin")
	c := f.create(t, admin, classes.NewClass{Name: "  7B Maths ", ExternalID: "sis-7b"})
	if !strings.HasPrefix(c.ID, "cls_") || c.Name != "7B Maths" || c.ExternalID != "sis-7b" || c.MemberCount != 0 {
		t.Fatalf("created %+v", c)
	}
	other := f.create(t, admin, classes.NewClass{Name: "7C"})
	if other.ExternalID != "" {
		t.Fatalf("a class created without an external id has %q", other.ExternalID)
	}

	_, err := f.classes.Create(admin, classes.NewClass{Name: "Again", ExternalID: "sis-7b"})
	wantErr(t, "a second class with the external id", err, errs.KindConflict, "EXTERNAL_ID_TAKEN")
	_, err = f.classes.Update(admin, other.ID, classes.Patch{ExternalID: ptr("sis-7b")})
	wantErr(t, "an update to a taken external id", err, errs.KindConflict, "EXTERNAL_ID_TAKEN")
	// The same key in another organization is no conflict.
	f.create(t, f.orgs[1].callers["admin"], classes.NewClass{Name: "Elsewhere", ExternalID: "sis-7b"})

	for _, bad := range []struct {
		in    classes.NewClass
		field string
	}{
		{classes.NewClass{Name: " "}, "name"},
		{classes.NewClass{Name: strings.Repeat("é", 201)}, "name"},
		{classes.NewClass{Name: "x", ExternalID: strings.Repeat("k", 201)}, "externalId"},
		{classes.NewClass{Name: "x", ExternalID: " sis-7b"}, "externalId"},
	} {
		_, err := f.classes.Create(admin, bad.in)
		wantField(t, fmt.Sprintf("create %+v", bad.in), err, bad.field)
	}
	_, err = f.classes.Update(admin, c.ID, classes.Patch{Name: ptr("")})
	wantField(t, "rename to nothing", err, "name")

	found, _, err := f.classes.List(admin, classes.Filter{ExternalID: "sis-7b"}, paging.Page{})
	if err != nil || len(found) != 1 || found[0].ID != c.ID {
		t.Fatalf("list by external id: %v, %v", found, err)
	}
	all, _, err := f.classes.List(admin, classes.Filter{}, paging.Page{})
	if err != nil || len(all) != 2 {
		t.Fatalf("list: %v, %v", all, err)
	}
	page, next, err := f.classes.List(admin, classes.Filter{}, paging.Page{Size: 1})
	if err != nil || len(page) != 1 || next == "" {
		t.Fatalf("first page of 1: %v, %q, %v", page, next, err)
	}

	updated, err := f.classes.Update(admin, c.ID, classes.Patch{Name: ptr("7B Algebra"), ExternalID: ptr("")})
	if err != nil || updated.Name != "7B Algebra" || updated.ExternalID != "" || !updated.UpdatedAt.After(c.UpdatedAt) {
		t.Fatalf("updated %+v, %v", updated, err)
	}
	// The freed key can be given again.
	if _, err := f.classes.Update(admin, other.ID, classes.Patch{ExternalID: ptr("sis-7b")}); err != nil {
		t.Fatal(err)
	}
	if err := f.classes.Delete(admin, c.ID); err != nil {
		t.Fatal(err)
	}
	_, err = f.classes.Get(admin, c.ID)
	wantErr(t, "a deleted class", err, errs.KindNotFound, "CLASS_NOT_FOUND")
	wantErr(t, "deleting it again", f.classes.Delete(admin, c.ID), errs.KindNotFound, "CLASS_NOT_FOUND")

	var actions []string
	for _, e := range f.auditEntries(t, c.ID) {
		if e.Actor.ID != f.user("admin").ID || e.Target.Type != "class" {
			t.Errorf("entry %s by %v on %v", e.Action, e.Actor, e.Target)
		}
		actions = append(actions, e.Action)
	}
	if want := []string{"class.created", "class.updated", "class.deleted"}; !slices.Equal(actions, want) {
		t.Fatalf("audited %v, want %v", actions, want)
	}
}

// TestTeachersSeeTheClassesTheyTeach: a teacher who creates a class is its
// teacher; another teacher finds no such class until made its teacher;
// owners and admins see every class.
func TestTeachersSeeTheClassesTheyTeach(t *testing.T) {
	f := newFixture(t)
	teacher, teacher2 := f.ctx("teacher"), f.ctx("teacher2")
	mine := f.create(t, teacher, classes.NewClass{Name: "Mine"})
	if mine.MemberCount != 1 {
		t.Fatalf("a teacher's new class has %d members, want its teacher", mine.MemberCount)
	}
	members, _, err := f.classes.Members(teacher, mine.ID, classes.MemberFilter{}, paging.Page{})
	if err != nil || len(members) != 1 || members[0].UserID != f.user("teacher").ID || members[0].Role != classes.RoleTeacher ||
		members[0].Name != "The teacher" || members[0].Email != f.user("teacher").Email {
		t.Fatalf("members of a teacher's new class: %+v, %v", members, err)
	}
	adminsClass := f.create(t, f.ctx("admin"), classes.NewClass{Name: "The admin's"})

	listed := func(name string) []string {
		t.Helper()
		list, _, err := f.classes.List(f.ctx(name), classes.Filter{}, paging.Page{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range list {
			out = append(out, c.ID)
		}
		return out
	}
	if got := listed("teacher"); !slices.Equal(got, []string{mine.ID}) {
		t.Fatalf("the teacher lists %v, want only their class", got)
	}
	if got := listed("teacher2"); len(got) != 0 {
		t.Fatalf("another teacher lists %v", got)
	}
	for _, staff := range []string{"owner", "admin"} {
		if got := listed(staff); !slices.Equal(got, []string{mine.ID, adminsClass.ID}) {
			t.Fatalf("%s lists %v, want every class", staff, got)
		}
	}

	// Every operation on a class another teacher teaches: not found.
	notFound := map[string]error{}
	_, notFound["get"] = f.classes.Get(teacher2, mine.ID)
	_, notFound["update"] = f.classes.Update(teacher2, mine.ID, classes.Patch{Name: ptr("Taken")})
	notFound["delete"] = f.classes.Delete(teacher2, mine.ID)
	_, _, notFound["members"] = f.classes.Members(teacher2, mine.ID, classes.MemberFilter{}, paging.Page{})
	_, notFound["add member"] = f.classes.AddMember(teacher2, mine.ID, classes.NewMember{UserID: f.user("teacher2").ID, Role: classes.RoleTeacher})
	notFound["remove member"] = f.classes.RemoveMember(teacher2, mine.ID, f.user("teacher").ID)
	for op, err := range notFound {
		wantErr(t, "another teacher's "+op, err, errs.KindNotFound, "CLASS_NOT_FOUND")
	}

	// Made a co-teacher by an admin, the second teacher sees it and may
	// manage it; a class student does not make a teacher see it.
	f.add(t, f.ctx("admin"), adminsClass.ID, f.user("teacher2").ID, classes.RoleStudent)
	if got := listed("teacher2"); len(got) != 0 {
		t.Fatalf("a teacher who is a class's student lists %v", got)
	}
	f.add(t, f.ctx("admin"), mine.ID, f.user("teacher2").ID, classes.RoleTeacher)
	if _, err := f.classes.Update(teacher2, mine.ID, classes.Patch{Name: ptr("Ours")}); err != nil {
		t.Fatal(err)
	}
	// A teacher who leaves the class no longer sees it.
	if err := f.classes.RemoveMember(teacher, mine.ID, f.user("teacher").ID); err != nil {
		t.Fatal(err)
	}
	_, err = f.classes.Get(teacher, mine.ID)
	wantErr(t, "the class a teacher left", err, errs.KindNotFound, "CLASS_NOT_FOUND")
}

// TestClassesOfAnotherOrganization: a class or user of another
// organization is not found, whatever the caller's role.
func TestClassesOfAnotherOrganization(t *testing.T) {
	f := newFixture(t)
	theirs := f.create(t, f.orgs[1].callers["owner"], classes.NewClass{Name: "Theirs", ExternalID: "x1"})
	mine := f.create(t, f.ctx("owner"), classes.NewClass{Name: "Mine"})
	owner := f.ctx("owner")

	_, err := f.classes.Get(owner, theirs.ID)
	wantErr(t, "get", err, errs.KindNotFound, "CLASS_NOT_FOUND")
	_, err = f.classes.Update(owner, theirs.ID, classes.Patch{Name: ptr("Mine now")})
	wantErr(t, "update", err, errs.KindNotFound, "CLASS_NOT_FOUND")
	wantErr(t, "delete", f.classes.Delete(owner, theirs.ID), errs.KindNotFound, "CLASS_NOT_FOUND")
	_, _, err = f.classes.Members(owner, theirs.ID, classes.MemberFilter{}, paging.Page{})
	wantErr(t, "members", err, errs.KindNotFound, "CLASS_NOT_FOUND")
	_, err = f.classes.AddMember(owner, theirs.ID, classes.NewMember{UserID: f.user("student").ID, Role: classes.RoleStudent})
	wantErr(t, "add to theirs", err, errs.KindNotFound, "CLASS_NOT_FOUND")
	if list, _, err := f.classes.List(owner, classes.Filter{ExternalID: "x1"}, paging.Page{}); err != nil || len(list) != 0 {
		t.Fatalf("their external id lists %v, %v", list, err)
	}

	// Their user, and a user of no organization, on my class.
	for what, id := range map[string]string{"their user": f.orgs[1].users["student"].ID, "an unknown user": "usr_01JD3M4Q9ZB8K1T7W2X5C6V0NA"} {
		_, err = f.classes.AddMember(owner, mine.ID, classes.NewMember{UserID: id, Role: classes.RoleStudent})
		wantErr(t, what, err, errs.KindNotFound, "USER_NOT_FOUND")
	}
	_, err = f.classes.AddMember(owner, mine.ID, classes.NewMember{UserID: "x", Role: classes.RoleStudent})
	wantField(t, "a malformed user id", err, "userId")
	wantErr(t, "remove their user", f.classes.RemoveMember(owner, mine.ID, f.orgs[1].users["student"].ID), errs.KindNotFound, "CLASS_MEMBER_NOT_FOUND")
	// And for the class id: malformed or of another kind.
	for _, id := range []string{"x", "exm_01JD3M4Q9ZB8K1T7W2X5C6V0NA", ""} {
		_, err := f.classes.Get(owner, id)
		wantErr(t, "class "+id, err, errs.KindNotFound, "CLASS_NOT_FOUND")
	}
}

// TestStudentsMayNotUseClasses: a student's credential lacks the classes
// scopes; with them, the student role is still refused.
func TestStudentsMayNotUseClasses(t *testing.T) {
	f := newFixture(t)
	c := f.create(t, f.ctx("owner"), classes.NewClass{Name: "7B"})
	f.add(t, f.ctx("owner"), c.ID, f.user("student").ID, classes.RoleStudent)
	for reason, student := range map[string]context.Context{
		"INSUFFICIENT_SCOPE": f.ctx("student"),
		"ROLE_NOT_ALLOWED":   as(f.user("student"), tenancy.AllScopes),
	} {
		errors := map[string]error{}
		_, _, errors["list"] = f.classes.List(student, classes.Filter{}, paging.Page{})
		_, errors["get"] = f.classes.Get(student, c.ID)
		_, errors["create"] = f.classes.Create(student, classes.NewClass{Name: "Mine"})
		_, errors["update"] = f.classes.Update(student, c.ID, classes.Patch{Name: ptr("Mine")})
		errors["delete"] = f.classes.Delete(student, c.ID)
		_, _, errors["members"] = f.classes.Members(student, c.ID, classes.MemberFilter{}, paging.Page{})
		_, errors["add member"] = f.classes.AddMember(student, c.ID, classes.NewMember{UserID: f.user("student").ID, Role: classes.RoleStudent})
		errors["remove member"] = f.classes.RemoveMember(student, c.ID, f.user("student").ID)
		for op, err := range errors {
			wantErr(t, "a student's "+op, err, errs.KindForbidden, reason)
		}
	}
	if got, err := f.classes.Get(f.ctx("owner"), c.ID); err != nil || got.MemberCount != 1 {
		t.Fatalf("after the students' attempts: %+v, %v", got, err)
	}
}
