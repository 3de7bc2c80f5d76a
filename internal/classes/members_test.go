package classes_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/assessd/assessd/internal/classes"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/tenancy"
)

// TestMembers: staff may be a class's student or teacher, a student only
// its student; adding a member again sets their role and is audited only
// when it changes; the roster lists names and emails, paged and by role.
func TestMembers(t *testing.T) {
	f := newFixture(t)
	owner := f.ctx("owner")
	c := f.create(t, owner, classes.NewClass{Name: "7B"})
	student, teacher, admin := f.user("student").ID, f.user("teacher").ID, f.user("admin").ID

	_, err := f.classes.AddMember(owner, c.ID, classes.NewMember{UserID: student, Role: classes.RoleTeacher})
	wantField(t, "a student as the class's teacher", err, "role")
	_, err = f.classes.AddMember(owner, c.ID, classes.NewMember{UserID: student, Role: "owner"})
	wantField(t, "an unknown class role", err, "role")

	m := f.add(t, owner, c.ID, student, classes.RoleStudent)
	if m.UserID != student || m.Role != classes.RoleStudent || m.Name != "The student" || m.AddedAt.IsZero() {
		t.Fatalf("added %+v", m)
	}
	f.add(t, owner, c.ID, teacher, classes.RoleStudent)
	f.add(t, owner, c.ID, admin, classes.RoleTeacher)
	// Again with the same role: the same member, nothing recorded.
	if again := f.add(t, owner, c.ID, student, classes.RoleStudent); again != m {
		t.Fatalf("added again %+v, want %+v", again, m)
	}
	// The teacher becomes the class's teacher: the role changes, the
	// membership stays.
	promoted := f.add(t, owner, c.ID, teacher, classes.RoleTeacher)
	if promoted.Role != classes.RoleTeacher {
		t.Fatalf("promoted %+v", promoted)
	}

	roster := func(filter classes.MemberFilter, p paging.Page) ([]classes.Member, string) {
		t.Helper()
		list, next, err := f.classes.Members(owner, c.ID, filter, p)
		if err != nil {
			t.Fatal(err)
		}
		return list, next
	}
	all, _ := roster(classes.MemberFilter{}, paging.Page{})
	if len(all) != 3 || !slices.IsSortedFunc(all, func(a, b classes.Member) int { return strings.Compare(a.UserID, b.UserID) }) {
		t.Fatalf("roster %+v", all)
	}
	teachers, _ := roster(classes.MemberFilter{Role: classes.RoleTeacher}, paging.Page{})
	if len(teachers) != 2 || teachers[0].Role != classes.RoleTeacher || teachers[1].Role != classes.RoleTeacher {
		t.Fatalf("teachers %+v", teachers)
	}
	first, next := roster(classes.MemberFilter{}, paging.Page{Size: 2})
	rest, last := roster(classes.MemberFilter{}, paging.Page{Size: 2, After: pageAfter(t, next)})
	if len(first) != 2 || len(rest) != 1 || last != "" || rest[0].UserID != all[2].UserID {
		t.Fatalf("pages %+v then %+v (%q)", first, rest, last)
	}
	_, _, err = f.classes.Members(owner, c.ID, classes.MemberFilter{Role: "owner"}, paging.Page{})
	wantField(t, "an unknown role filter", err, "role")
	if got, _ := f.classes.Get(owner, c.ID); got.MemberCount != 3 {
		t.Fatalf("memberCount %d, want 3", got.MemberCount)
	}

	if err := f.classes.RemoveMember(owner, c.ID, student); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "removing them again", f.classes.RemoveMember(owner, c.ID, student), errs.KindNotFound, "CLASS_MEMBER_NOT_FOUND")
	wantErr(t, "removing a malformed id", f.classes.RemoveMember(owner, c.ID, "x"), errs.KindNotFound, "CLASS_MEMBER_NOT_FOUND")

	type entry struct{ action, before, after string }
	var got []entry
	for _, e := range f.auditEntries(t, c.ID) {
		got = append(got, entry{e.Action, fmtSnap(e.Before), fmtSnap(e.After)})
	}
	want := []entry{
		{"class.created", "", "7B"},
		{"class.member_added", "", student + " student"},
		{"class.member_added", "", teacher + " student"},
		{"class.member_added", "", admin + " teacher"},
		{"class.member_added", teacher + " student", teacher + " teacher"},
		{"class.member_removed", student + " student", ""},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("audited\n%v\nwant\n%v", got, want)
	}

	// A member whose user is deleted leaves the roster with them.
	if err := tenancy.NewService(f.db).DeleteUser(owner, admin); err != nil {
		t.Fatal(err)
	}
	if all, _ := roster(classes.MemberFilter{}, paging.Page{}); len(all) != 1 || all[0].UserID != teacher {
		t.Fatalf("after the admin's deletion: %+v", all)
	}
}

// pageAfter reads the cursor of a page token as the API would.
func pageAfter(t *testing.T, token string) string {
	t.Helper()
	p, err := paging.Parse(0, token)
	if err != nil {
		t.Fatal(err)
	}
	return p.After
}

// fmtSnap renders a class or member audit snapshot compactly.
func fmtSnap(m map[string]any) string {
	switch {
	case m == nil:
		return ""
	case m["name"] != nil:
		return m["name"].(string)
	}
	return m["userId"].(string) + " " + m["role"].(string)
}

// TestIsTeacherOf: the caller teaches a class when on its roster as its
// teacher, and as long as their own role is staff.
func TestIsTeacherOf(t *testing.T) {
	f := newFixture(t)
	c := f.create(t, f.ctx("teacher"), classes.NewClass{Name: "7B"})
	other := f.create(t, f.ctx("admin"), classes.NewClass{Name: "7C"})
	f.add(t, f.ctx("admin"), other.ID, f.user("teacher2").ID, classes.RoleStudent)
	f.add(t, f.ctx("admin"), other.ID, f.user("student").ID, classes.RoleStudent)

	for _, tc := range []struct {
		who     string
		classes []string
		want    bool
	}{
		{"teacher", []string{c.ID}, true},
		{"teacher", []string{other.ID, c.ID}, true},
		{"teacher", []string{other.ID}, false},
		{"teacher", nil, false},
		{"teacher2", []string{other.ID}, false}, // its student, not its teacher
		{"student", []string{other.ID}, false},
		{"admin", []string{c.ID}, false}, // sees it, does not teach it
		{"teacher", []string{"x", ""}, false},
	} {
		got, err := f.classes.IsTeacherOf(f.ctx(tc.who), tc.classes)
		if err != nil || got != tc.want {
			t.Errorf("%s teaches one of %v: %v, %v; want %v", tc.who, tc.classes, got, err, tc.want)
		}
	}
	if got, err := f.classes.IsTeacherOf(f.orgs[1].callers["teacher"], []string{c.ID}); err != nil || got {
		t.Errorf("a teacher of another organization teaches it: %v, %v", got, err)
	}

	// A teacher made a student keeps the roster entry, and teaches nothing.
	teacher := f.user("teacher")
	demoted := tenancy.RoleStudent
	if _, err := tenancy.NewService(f.db).UpdateUser(f.ctx("owner"), teacher.ID, tenancy.UserPatch{Role: &demoted}); err != nil {
		t.Fatal(err)
	}
	teacher.Role = tenancy.RoleStudent
	if got, err := f.classes.IsTeacherOf(as(teacher, tenancy.APIKeyScopes(tenancy.RoleStudent)), []string{c.ID}); err != nil || got {
		t.Errorf("a teacher made a student teaches the class: %v, %v", got, err)
	}
	_, err := f.classes.IsTeacherOf(context.Background(), []string{c.ID})
	wantErr(t, "no caller", err, errs.KindUnauthenticated, "UNAUTHENTICATED")
}

// TestTeacherServiceAccountsCannotCreateClasses: a service account is no
// user, so it can be no class's teacher.
func TestTeacherServiceAccountsCannotCreateClasses(t *testing.T) {
	f := newFixture(t)
	sa := tenancy.WithCaller(context.Background(), &tenancy.Caller{Kind: tenancy.KindJWT, OrgID: f.orgs[0].id, UserID: "sva_test",
		Role: tenancy.RoleTeacher, Scopes: tenancy.ScopesForRole(tenancy.RoleTeacher)})
	_, err := f.classes.Create(sa, classes.NewClass{Name: "7B"})
	wantErr(t, "a teacher service account's class", err, errs.KindForbidden, "ROLE_NOT_ALLOWED")
	admin := tenancy.WithCaller(context.Background(), &tenancy.Caller{Kind: tenancy.KindJWT, OrgID: f.orgs[0].id, UserID: "sva_admin",
		Role: tenancy.RoleAdmin, Scopes: tenancy.ScopesForRole(tenancy.RoleAdmin)})
	f.create(t, admin, classes.NewClass{Name: "7B"})
}

// TestMembersAreBounded: a class holds MaxMembers members; when four
// additions race for the last two places, two succeed; a member added
// again needs no room.
func TestMembersAreBounded(t *testing.T) {
	f := newFixture(t)
	owner := f.ctx("owner")
	c := f.create(t, owner, classes.NewClass{Name: "Everyone"})
	// MaxMembers-2 users on the roster, and four more to race.
	n := classes.MaxMembers + 2
	users := make([]string, n)
	for i := range users {
		users[i] = ids.New(ids.User)
	}
	bg := context.Background()
	if _, err := f.owner.Exec(bg, `
		INSERT INTO users (id, org_id, email, name, role)
		SELECT id, $2, id || '@bulk.test', 'Bulk', 'student' FROM unnest($1::text[]) AS id`, users, f.orgs[0].id); err != nil {
		t.Fatal(err)
	}
	if _, err := f.owner.Exec(bg, `
		INSERT INTO class_members (class_id, user_id, org_id, role)
		SELECT $2, id, $3, 'student' FROM unnest($1::text[]) AS id`, users[:classes.MaxMembers-2], c.ID, f.orgs[0].id); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make(chan error, 4)
	for _, u := range users[classes.MaxMembers-2:] {
		wg.Go(func() {
			_, err := f.classes.AddMember(owner, c.ID, classes.NewMember{UserID: u, Role: classes.RoleStudent})
			results <- err
		})
	}
	wg.Wait()
	close(results)
	added, full := 0, 0
	for err := range results {
		switch e, _ := errs.As(err); {
		case err == nil:
			added++
		case e != nil && e.Reason == "CLASS_FULL" && e.Kind == errs.KindConflict:
			full++
		default:
			t.Fatal(err)
		}
	}
	got, err := f.classes.Get(owner, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if added != 2 || full != 2 || got.MemberCount != classes.MaxMembers {
		t.Fatalf("racing for the last 2 places: %d added, %d refused, %d members; want 2, 2 and %d", added, full, got.MemberCount, classes.MaxMembers)
	}
	// A member's role changes in a full class.
	if _, err := f.classes.AddMember(owner, c.ID, classes.NewMember{UserID: users[0], Role: classes.RoleStudent}); err != nil {
		t.Fatalf("a member added again to a full class: %v", err)
	}
	if err := f.classes.RemoveMember(owner, c.ID, users[0]); err != nil {
		t.Fatal(err)
	}
	f.add(t, owner, c.ID, f.user("student").ID, classes.RoleStudent)
}

// TestClassesAreBounded: an organization holds MaxClasses classes, even
// when the last places are taken concurrently.
func TestClassesAreBounded(t *testing.T) {
	f := newFixture(t)
	owner := f.ctx("owner")
	existing := make([]string, classes.MaxClasses-2)
	for i := range existing {
		existing[i] = ids.New(ids.Class)
	}
	if _, err := f.owner.Exec(context.Background(), `
		INSERT INTO classes (id, org_id, name, created_by) SELECT id, $2, 'Bulk', 'test' FROM unnest($1::text[]) AS id`,
		existing, f.orgs[0].id); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			_, err := f.classes.Create(owner, classes.NewClass{Name: "Racing"})
			results <- err
		})
	}
	wg.Wait()
	close(results)
	created, refused := 0, 0
	for err := range results {
		switch e, _ := errs.As(err); {
		case err == nil:
			created++
		case e != nil && e.Reason == "CLASS_LIMIT" && e.Kind == errs.KindConflict:
			refused++
		default:
			t.Fatal(err)
		}
	}
	if created != 2 || refused != 2 {
		t.Fatalf("racing for the last 2 places: %d created, %d refused; want 2 and 2", created, refused)
	}
	// Another organization is not bounded by this one's classes.
	f.create(t, f.orgs[1].callers["owner"], classes.NewClass{Name: "Theirs"})
	if err := f.classes.Delete(owner, existing[0]); err != nil {
		t.Fatal(err)
	}
	f.create(t, owner, classes.NewClass{Name: "After a deletion"})
}
