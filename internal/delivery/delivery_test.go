package delivery_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/delivery"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// school is an organization with staff, two students and an exam of three
// rule-scored questions.
type school struct {
	t        *testing.T
	url      string
	db       *store.DB
	ten      *tenancy.Service
	content  *assessment.Service
	svc      *delivery.Service
	org      tenancy.Org
	staff    context.Context
	students []tenancy.User
	exam     assessment.Exam
	qs       []assessment.Question
}

func newSchool(t *testing.T, url string, db *store.DB, name string) *school {
	t.Helper()
	s := &school{t: t, url: url, db: db, ten: tenancy.NewService(db), content: assessment.NewService(db)}
	s.svc = delivery.NewService(db, s.content)
	var err error
	if s.org, err = s.ten.CreateOrg(context.Background(), tenancy.NewOrg{Name: name, Country: "US", Plan: tenancy.PlanEnterprise}); err != nil {
		t.Fatal(err)
	}
	s.staff = tenancy.WithCaller(context.Background(), tenancy.SystemCaller(s.org.ID))
	for i := range 2 {
		u, err := s.ten.CreateUser(s.staff, tenancy.NewUser{Email: fmt.Sprintf("s%d@%s.test", i, name), Name: "S", Role: tenancy.RoleStudent})
		if err != nil {
			t.Fatal(err)
		}
		s.students = append(s.students, u)
	}
	if s.exam, err = s.content.CreateExam(s.staff, assessment.NewExam{Name: "Fractions", Language: "en", DurationMinutes: 40}); err != nil {
		t.Fatal(err)
	}
	for _, in := range []assessment.NewQuestion{
		{Type: assessment.TypeMultipleChoice, Prompt: "Half?", Points: 2, Config: map[string]any{"options": []any{
			map[string]any{"id": "a", "text": "1/3"}, map[string]any{"id": "b", "text": "1/2", "correct": true},
			map[string]any{"id": "c", "text": "2/3"}, map[string]any{"id": "d", "text": "3/4"}}}},
		{Type: assessment.TypeTrueFalse, Prompt: "2/4 = 1/2.", Config: map[string]any{"correct": true}},
		{Type: assessment.TypeNumeric, Prompt: "3/4 as a decimal?", Config: map[string]any{"correct": 0.75}},
	} {
		q, err := s.content.CreateQuestion(s.staff, s.exam.ID, in)
		if err != nil {
			t.Fatal(err)
		}
		s.qs = append(s.qs, q)
	}
	return s
}

// as is a context acting as user u with an API key.
func (s *school) as(u tenancy.User) context.Context {
	return tenancy.WithCaller(context.Background(), &tenancy.Caller{Kind: tenancy.KindAPIKey, OrgID: s.org.ID, UserID: u.ID,
		Role: u.Role, Scopes: tenancy.APIKeyScopes(u.Role)})
}

// sql runs a statement as the schema owner: what tests use to move time.
func (s *school) sql(query string, args ...any) {
	s.t.Helper()
	conn, err := pgx.Connect(context.Background(), s.url)
	if err != nil {
		s.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), query, args...); err != nil {
		s.t.Fatal(err)
	}
}

func (s *school) assign(in delivery.NewAssignment) delivery.Assignment {
	s.t.Helper()
	if in.ExamID == "" {
		in.ExamID = s.exam.ID
	}
	if in.OpensAt.IsZero() {
		in.OpensAt = time.Now().Add(-time.Minute)
	}
	if in.ClosesAt.IsZero() {
		in.ClosesAt = time.Now().Add(2 * time.Hour)
	}
	if in.UserIDs == nil && in.ClassIDs == nil {
		in.UserIDs = []string{s.students[0].ID, s.students[1].ID}
	}
	a, err := s.svc.CreateAssignment(s.staff, in)
	if err != nil {
		s.t.Fatal(err)
	}
	return a
}

func open(t *testing.T) (string, *store.DB) {
	t.Helper()
	url := storetest.NewURL(t)
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return url, db
}

func wantReason(t *testing.T, err error, kind errs.Kind, reason string) {
	t.Helper()
	e, ok := errs.As(err)
	if !ok || e.Kind != kind || (reason != "" && e.Reason != reason) {
		t.Fatalf("err = %v; want %v %s", err, kind, reason)
	}
}

func TestAttemptTakenSavedAndSubmittedOnce(t *testing.T) {
	url, db := open(t)
	s := newSchool(t, url, db, "north")
	asg := s.assign(delivery.NewAssignment{ShuffleQuestions: true, ShuffleOptions: true})
	if asg.TimeLimitMinutes != 40 || asg.MaxAttempts != 1 || asg.GraceSeconds != 30 || asg.Overdue != "autosubmit" {
		t.Fatalf("defaults = %+v", asg)
	}
	student := s.as(s.students[0])
	a, err := s.svc.StartAttempt(student, asg.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Deadline.Sub(a.StartedAt); got != 40*time.Minute {
		t.Errorf("deadline - start = %v; want the exam's 40 minutes", got)
	}
	if len(a.Questions) != 3 || a.Number != 1 || a.Status != delivery.StatusInProgress {
		t.Fatalf("attempt = %+v", a)
	}
	// The order is the attempt's, the same on every read.
	again, err := s.svc.Attempt(student, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(a.Questions, again.Questions, func(x, y assessment.SheetQuestion) bool {
		return x.ID == y.ID && slices.Equal(x.Options, y.Options)
	}) {
		t.Errorf("the order changed between reads: %v then %v", a.Questions, again.Questions)
	}
	// Saves are revisions; a save for a question not in the attempt is 400.
	mc := s.qs[0].ID
	for i, v := range []string{"a", "b"} {
		r, err := s.svc.SaveResponse(student, a.ID, mc, delivery.NewResponse{Value: v})
		if err != nil || r.Revision != i+1 {
			t.Fatalf("save %d = %+v, %v; want revision %d", i, r, err, i+1)
		}
	}
	if _, err := s.svc.SaveResponse(student, a.ID, s.qs[1].ID, delivery.NewResponse{Value: true}); err != nil {
		t.Fatal(err)
	}
	_, err = s.svc.SaveResponse(student, a.ID, ids.New(ids.Question), delivery.NewResponse{Value: 1})
	wantReason(t, err, errs.KindInvalid, "")
	stale := 1
	_, err = s.svc.SaveResponse(student, a.ID, mc, delivery.NewResponse{Value: "c", ExpectedRevision: &stale})
	wantReason(t, err, errs.KindConflict, "RESPONSE_CHANGED")
	// Another student cannot read or write it.
	other := s.as(s.students[1])
	if _, err := s.svc.Attempt(other, a.ID); !errs.Is(err, errs.KindNotFound) {
		t.Errorf("another student's read = %v; want not found", err)
	}
	if _, err := s.svc.SaveResponse(other, a.ID, mc, delivery.NewResponse{Value: "a"}); !errs.Is(err, errs.KindNotFound) {
		t.Errorf("another student's save = %v; want not found", err)
	}
	// Submitting twice gives one result, graded by the rules as saved.
	done, err := s.svc.SubmitAttempt(student, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	twice, err := s.svc.SubmitAttempt(student, a.ID)
	if err != nil || twice.ResultID != done.ResultID || done.SubmittedBy != delivery.ByStudent {
		t.Fatalf("submit again = %+v, %v; first %+v", twice, err, done)
	}
	res, err := s.content.Result(s.staff, "", done.ResultID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Score != 3 || res.MaxScore != 4 || res.Source != assessment.SourceAttempt || res.AttemptID != a.ID || res.AssignmentID != asg.ID {
		t.Errorf("result = score %v/%v source %q attempt %q assignment %q", res.Score, res.MaxScore, res.Source, res.AttemptID, res.AssignmentID)
	}
	_, err = s.svc.SaveResponse(student, a.ID, mc, delivery.NewResponse{Value: "a"})
	wantReason(t, err, errs.KindConflict, "ATTEMPT_CLOSED")
	// One attempt allowed.
	_, err = s.svc.StartAttempt(student, asg.ID, "")
	wantReason(t, err, errs.KindConflict, "ATTEMPTS_EXHAUSTED")
	got, err := s.svc.Assignment(s.staff, asg.ID)
	if err != nil || *got.Progress != (delivery.Progress{Assigned: 2, NotStarted: 1, Submitted: 1}) {
		t.Errorf("progress = %+v, %v", got.Progress, err)
	}
}

func TestNoCorrectAnswersReachTheStudent(t *testing.T) {
	url, db := open(t)
	s := newSchool(t, url, db, "keys")
	a, err := s.svc.StartAttempt(s.as(s.students[0]), s.assign(delivery.NewAssignment{}).ID, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range a.Questions {
		if q.Type == assessment.TypeMultipleChoice && len(q.Options) != 4 {
			t.Errorf("options = %v", q.Options)
		}
	}
	// SheetQuestion has no field for a key: what the API shows is built
	// from it alone (api.sheetConfig), checked end to end in internal/app.
}

func TestOverlappingStartsMakeOneAttempt(t *testing.T) {
	url, db := open(t)
	s := newSchool(t, url, db, "tabs")
	asg := s.assign(delivery.NewAssignment{})
	student := s.as(s.students[0])
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Go(func() {
			a, err := s.svc.StartAttempt(student, asg.ID, "")
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = a.ID
		})
	}
	wg.Wait()
	slices.Sort(got)
	if ids := slices.Compact(got); len(ids) != 1 {
		t.Errorf("starts made attempts %v; want one", ids)
	}
}

func TestWindowAttemptsAndAccommodations(t *testing.T) {
	url, db := open(t)
	s := newSchool(t, url, db, "window")
	later := s.assign(delivery.NewAssignment{OpensAt: time.Now().Add(time.Hour), ClosesAt: time.Now().Add(2 * time.Hour)})
	_, err := s.svc.StartAttempt(s.as(s.students[0]), later.ID, "")
	wantReason(t, err, errs.KindConflict, "ASSIGNMENT_NOT_OPEN")

	closes := time.Now().Add(45 * time.Minute).Truncate(time.Microsecond)
	asg := s.assign(delivery.NewAssignment{ClosesAt: closes, TimeLimitMinutes: new(30), MaxAttempts: new(1)})
	// 25 % extra time: 37.5 minutes; a later close; a second attempt.
	if _, err := s.svc.SetAccommodation(s.staff, delivery.Accommodation{AssignmentID: asg.ID, UserID: s.students[1].ID,
		ExtraTimePercent: 25, MaxAttempts: 2}); err != nil {
		t.Fatal(err)
	}
	plain, err := s.svc.StartAttempt(s.as(s.students[0]), asg.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	extra, err := s.svc.StartAttempt(s.as(s.students[1]), asg.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if d := plain.Deadline.Sub(plain.StartedAt); d != 30*time.Minute {
		t.Errorf("plain limit = %v", d)
	}
	if d := extra.Deadline.Sub(extra.StartedAt); d != 37*time.Minute+30*time.Second {
		t.Errorf("limit with 25%% extra = %v; want 37m30s", d)
	}
	// Never past the close: 100 % extra would pass it.
	if _, err := s.svc.SetAccommodation(s.staff, delivery.Accommodation{AssignmentID: asg.ID, UserID: s.students[0].ID,
		ExtraTimePercent: 100}); err != nil {
		t.Fatal(err)
	}
	extended, err := s.svc.Attempt(s.staff, plain.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !extended.Deadline.Equal(closes) {
		t.Errorf("deadline with 100%% extra = %v; want the close %v", extended.Deadline, closes)
	}
	// An edit never shortens a running attempt.
	if _, err := s.svc.UpdateAssignment(s.staff, asg.ID, delivery.AssignmentPatch{TimeLimitMinutes: new(5)}); err != nil {
		t.Fatal(err)
	}
	kept, err := s.svc.Attempt(s.staff, plain.ID)
	if err != nil || !kept.Deadline.Equal(extended.Deadline) {
		t.Errorf("after shortening the limit the deadline is %v (%v); want %v kept", kept.Deadline, err, extended.Deadline)
	}
	// The accommodation's second attempt, after the first is submitted.
	if _, err := s.svc.SubmitAttempt(s.as(s.students[1]), extra.ID); err != nil {
		t.Fatal(err)
	}
	second, err := s.svc.StartAttempt(s.as(s.students[1]), asg.ID, "")
	if err != nil || second.Number != 2 {
		t.Fatalf("second attempt = %+v, %v", second, err)
	}
	_, err = s.svc.StartAttempt(s.as(s.students[0]), ids.New(ids.Assignment), "")
	wantReason(t, err, errs.KindNotFound, "")
}

func TestDeadlineClosesAnOpenAttempt(t *testing.T) {
	url, db := open(t)
	s := newSchool(t, url, db, "deadline")
	for _, overdue := range []string{delivery.OverdueAutosubmit, delivery.OverdueDiscard} {
		t.Run(overdue, func(t *testing.T) {
			asg := s.assign(delivery.NewAssignment{Overdue: overdue, UserIDs: []string{s.students[0].ID}})
			student := s.as(s.students[0])
			a, err := s.svc.StartAttempt(student, asg.ID, "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.svc.SaveResponse(student, a.ID, s.qs[2].ID, delivery.NewResponse{Value: 0.75}); err != nil {
				t.Fatal(err)
			}
			c, err := s.svc.Close(context.Background(), s.org.ID, a.ID)
			if err != nil || c.Closed || !c.Until.Equal(a.Closes()) {
				t.Fatalf("close before the deadline = %+v, %v; want open until %v", c, err, a.Closes())
			}
			// The time runs out: within the grace a save is still taken.
			s.sql(`UPDATE attempts SET deadline = now() - interval '10 seconds' WHERE id = $1`, a.ID)
			if _, err := s.svc.SaveResponse(student, a.ID, s.qs[1].ID, delivery.NewResponse{Value: true}); err != nil {
				t.Fatalf("save in the grace: %v", err)
			}
			s.sql(`UPDATE attempts SET deadline = now() - interval '31 seconds' WHERE id = $1`, a.ID)
			_, err = s.svc.SaveResponse(student, a.ID, s.qs[1].ID, delivery.NewResponse{Value: false})
			wantReason(t, err, errs.KindConflict, "ATTEMPT_CLOSED")
			for range 2 { // a retry of the activity changes nothing
				if c, err = s.svc.Close(context.Background(), s.org.ID, a.ID); err != nil || !c.Closed {
					t.Fatalf("close = %+v, %v", c, err)
				}
			}
			got, err := s.svc.Attempt(s.staff, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			if overdue == delivery.OverdueDiscard {
				if got.Status != delivery.StatusDiscarded || got.ResultID != "" {
					t.Errorf("discarded attempt = %+v", got)
				}
				return
			}
			if got.Status != delivery.StatusSubmitted || got.SubmittedBy != delivery.BySystem || got.ResultID == "" {
				t.Fatalf("autosubmitted attempt = %+v", got)
			}
			res, err := s.content.Result(s.staff, "", got.ResultID)
			if err != nil || res.Score != 2 {
				t.Errorf("result = %+v, %v; want the two saved answers scored (2)", res, err)
			}
			results, _, err := s.content.Results(s.staff, s.exam.ID, assessment.ResultFilter{UserID: s.students[0].ID}, paging.Page{Size: 50})
			if err != nil || len(results) != 1 {
				t.Errorf("results of the student = %d, %v; want exactly one", len(results), err)
			}
		})
	}
}

func TestSubmitAndDeadlineRaceMakeOneResult(t *testing.T) {
	url, db := open(t)
	s := newSchool(t, url, db, "race")
	asg := s.assign(delivery.NewAssignment{})
	for i := range 10 {
		student := s.as(s.students[i%2])
		if i >= 2 {
			if _, err := s.svc.UpdateAssignment(s.staff, asg.ID, delivery.AssignmentPatch{MaxAttempts: new(i + 1)}); err != nil {
				t.Fatal(err)
			}
		}
		a, err := s.svc.StartAttempt(student, asg.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		s.sql(`UPDATE attempts SET deadline = now() - interval '1 minute', grace_seconds = 0 WHERE id = $1`, a.ID)
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = s.svc.SubmitAttempt(student, a.ID) })
		wg.Go(func() { _, _ = s.svc.Close(context.Background(), s.org.ID, a.ID) })
		wg.Wait()
		var n int
		if err := s.db.Q(s.staff).QueryRow(s.staff, `SELECT count(*) FROM results WHERE attempt_id = $1`, a.ID).Scan(&n); err != nil || n != 1 {
			t.Fatalf("results of attempt %d = %d, %v; want 1", i, n, err)
		}
	}
}

func TestResultsShownAsTheAssignmentSays(t *testing.T) {
	url, db := open(t)
	s := newSchool(t, url, db, "shown")
	student := s.as(s.students[0])
	for _, tc := range []struct {
		show  string
		shown bool
	}{{delivery.ShowAfterSubmit, true}, {delivery.ShowNever, false}, {delivery.ShowAfterClose, false}} {
		asg := s.assign(delivery.NewAssignment{ShowResults: tc.show, UserIDs: []string{s.students[0].ID}})
		a, err := s.svc.StartAttempt(student, asg.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		if a, err = s.svc.SubmitAttempt(student, a.ID); err != nil {
			t.Fatal(err)
		}
		_, err = s.content.Result(student, "", a.ResultID)
		if shown := err == nil; shown != tc.shown {
			t.Errorf("showResults %s: the student reads the result: %v (%v)", tc.show, shown, err)
		}
		if _, err := s.content.Result(s.staff, "", a.ResultID); err != nil {
			t.Errorf("showResults %s: staff cannot read it: %v", tc.show, err)
		}
	}
}

func TestTenantsAndRolesAreIsolated(t *testing.T) {
	url, db := open(t)
	a, b := newSchool(t, url, db, "alpha"), newSchool(t, url, db, "beta")
	asg := a.assign(delivery.NewAssignment{})
	att, err := a.svc.StartAttempt(a.as(a.students[0]), asg.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"assignment": func() error { _, err := b.svc.Assignment(b.staff, asg.ID); return err }(),
		"attempt":    func() error { _, err := b.svc.Attempt(b.staff, att.ID); return err }(),
		"start":      func() error { _, err := b.svc.StartAttempt(b.as(b.students[0]), asg.ID, ""); return err }(),
		"save": func() error {
			_, err := b.svc.SaveResponse(b.staff, att.ID, a.qs[0].ID, delivery.NewResponse{Value: "a"})
			return err
		}(),
		"submit": func() error { _, err := b.svc.SubmitAttempt(b.staff, att.ID); return err }(),
		"delete": b.svc.DeleteAssignment(b.staff, asg.ID),
	} {
		if !errs.Is(err, errs.KindNotFound) {
			t.Errorf("%s from another organization = %v; want not found", name, err)
		}
	}
	// Another organization's exam, class or user cannot be assigned.
	_, err = b.svc.CreateAssignment(b.staff, delivery.NewAssignment{ExamID: a.exam.ID, UserIDs: []string{b.students[0].ID},
		OpensAt: time.Now(), ClosesAt: time.Now().Add(time.Hour)})
	wantReason(t, err, errs.KindInvalid, "")
	_, err = b.svc.CreateAssignment(b.staff, delivery.NewAssignment{ExamID: b.exam.ID, UserIDs: []string{a.students[0].ID},
		OpensAt: time.Now(), ClosesAt: time.Now().Add(time.Hour)})
	wantReason(t, err, errs.KindInvalid, "")
	// A student cannot manage assignments nor start one for another.
	_, err = a.svc.CreateAssignment(a.as(a.students[0]), delivery.NewAssignment{ExamID: a.exam.ID})
	wantReason(t, err, errs.KindForbidden, "")
	_, err = a.svc.StartAttempt(a.as(a.students[0]), asg.ID, a.students[1].ID)
	wantReason(t, err, errs.KindForbidden, "")
	// A student lists only what is given to them.
	a.assign(delivery.NewAssignment{UserIDs: []string{a.students[1].ID}})
	mine, _, err := a.svc.Assignments(a.as(a.students[0]), delivery.AssignmentFilter{}, paging.Page{Size: 50})
	if err != nil || len(mine) != 1 || mine[0].ID != asg.ID {
		t.Errorf("student's assignments = %v, %v; want only %s", mine, err, asg.ID)
	}
	all, _, err := a.svc.Assignments(a.staff, delivery.AssignmentFilter{}, paging.Page{Size: 50})
	if err != nil || len(all) != 2 {
		t.Errorf("staff's assignments = %d, %v; want 2", len(all), err)
	}
}

func TestClassStudentsAreAssigned(t *testing.T) {
	url, db := open(t)
	s := newSchool(t, url, db, "classes")
	class := ids.New(ids.Class)
	s.sql(`INSERT INTO classes (id, org_id, name, created_by) VALUES ($1, $2, '7B', 'test')`, class, s.org.ID)
	s.sql(`INSERT INTO class_members (class_id, user_id, org_id, role) VALUES ($1, $2, $3, 'student')`, class, s.students[1].ID, s.org.ID)
	asg := s.assign(delivery.NewAssignment{ClassIDs: []string{class}, UserIDs: []string{}})
	if _, err := s.svc.StartAttempt(s.as(s.students[1]), asg.ID, ""); err != nil {
		t.Fatalf("a student of the class: %v", err)
	}
	_, err := s.svc.StartAttempt(s.as(s.students[0]), asg.ID, "")
	wantReason(t, err, errs.KindNotFound, "")
	_, err = s.svc.StartAttempt(s.staff, asg.ID, s.students[0].ID)
	wantReason(t, err, errs.KindInvalid, "")
	got, err := s.svc.Assignment(s.staff, asg.ID)
	if err != nil || *got.Progress != (delivery.Progress{Assigned: 1, InProgress: 1}) {
		t.Errorf("progress = %+v, %v", got.Progress, err)
	}
}

// A file a saved response names is attached: the sweep of uploads no
// answer names leaves it, however long the attempt runs.
func TestResponseFilesAreAttached(t *testing.T) {
	url, db := open(t)
	s := newSchool(t, url, db, "files")
	file := "med_" + strings.Repeat("f", 32)
	s.sql(`INSERT INTO media_files (id, org_id, name, content_type, content, uploaded_by)
		VALUES ($1, $2, 'notes.txt', 'text/plain', 'x', $3)`, file, s.org.ID, s.students[0].ID)
	student := s.as(s.students[0])
	a, err := s.svc.StartAttempt(student, s.assign(delivery.NewAssignment{}).ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.svc.SaveResponse(student, a.ID, s.qs[0].ID, delivery.NewResponse{Value: "b",
		Files: []string{"https://assessd.example/media/" + file + "/notes.txt"}}); err != nil {
		t.Fatal(err)
	}
	var attached bool
	if err := s.db.Q(s.staff).QueryRow(s.staff, `SELECT attached FROM media_files WHERE id = $1`, file).Scan(&attached); err != nil || !attached {
		t.Errorf("the file a response names: attached %v, %v", attached, err)
	}
}
