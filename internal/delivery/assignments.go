package delivery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// NewAssignment is the input of CreateAssignment; nil pointers take the
// defaults (the exam's duration, one attempt, 30 s of grace).
type NewAssignment struct {
	ExamID           string
	ClassIDs         []string
	UserIDs          []string
	OpensAt          time.Time
	ClosesAt         time.Time
	TimeLimitMinutes *int
	MaxAttempts      *int
	ShuffleQuestions bool
	ShuffleOptions   bool
	GraceSeconds     *int
	Overdue          string
	ShowResults      string
}

// AssignmentPatch changes the fields that are set.
type AssignmentPatch struct {
	ClassIDs, UserIDs                *[]string
	OpensAt, ClosesAt                *time.Time
	TimeLimitMinutes, MaxAttempts    *int
	ShuffleQuestions, ShuffleOptions *bool
	GraceSeconds                     *int
	Overdue, ShowResults             *string
}

// CreateAssignment gives an exam to classes and users.
func (s *Service) CreateAssignment(ctx context.Context, in NewAssignment) (Assignment, error) {
	caller, err := tenancy.Authorize(ctx, WriteAssignments)
	if err != nil {
		return Assignment{}, err
	}
	a := Assignment{ID: ids.New(ids.Assignment), ExamID: in.ExamID, ClassIDs: in.ClassIDs, UserIDs: in.UserIDs,
		OpensAt: in.OpensAt, ClosesAt: in.ClosesAt, MaxAttempts: 1, ShuffleQuestions: in.ShuffleQuestions,
		ShuffleOptions: in.ShuffleOptions, GraceSeconds: DefaultGraceSeconds, Overdue: or(in.Overdue, OverdueAutosubmit),
		ShowResults: or(in.ShowResults, ShowAfterSubmit), CreatedBy: caller.UserID}
	if !ids.Valid(ids.Exam, in.ExamID) {
		return Assignment{}, errs.Invalid("examId", "must be an exam id (exm_...)")
	}
	setInt(&a.MaxAttempts, in.MaxAttempts)
	setInt(&a.GraceSeconds, in.GraceSeconds)
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		exam, err := s.content.Exam(ctx, in.ExamID)
		if errs.Is(err, errs.KindNotFound) {
			return errs.Invalid("examId", "names no exam of this organization")
		}
		if err != nil {
			return err
		}
		a.TimeLimitMinutes = exam.DurationMinutes
		setInt(&a.TimeLimitMinutes, in.TimeLimitMinutes)
		if err := validate(a); err != nil {
			return err
		}
		if err := s.checkAssignees(ctx, caller, a.ClassIDs, a.UserIDs); err != nil {
			return err
		}
		q := s.db.Q(ctx)
		if err := q.QueryRow(ctx, `
			INSERT INTO assignments (id, org_id, exam_id, opens_at, closes_at, time_limit_minutes, max_attempts,
			                         shuffle_questions, shuffle_options, grace_seconds, overdue, show_results, created_by)
			VALUES ($1, app_org_id(), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
			RETURNING created_at, updated_at`,
			a.ID, a.ExamID, a.OpensAt, a.ClosesAt, a.TimeLimitMinutes, a.MaxAttempts, a.ShuffleQuestions,
			a.ShuffleOptions, a.GraceSeconds, a.Overdue, a.ShowResults, a.CreatedBy).Scan(&a.CreatedAt, &a.UpdatedAt); err != nil {
			return err
		}
		if err := s.setAssignees(ctx, q, a.ID, &a.ClassIDs, &a.UserIDs); err != nil {
			return err
		}
		return audit.Record(ctx, s.db, audit.Entry{Action: "assignment.created", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "assignment", ID: a.ID}, After: snapshot(a)})
	})
	if store.ForeignKey(err) == "assignments_exam_id_fkey" {
		return Assignment{}, errs.Invalid("examId", "names no exam of this organization") // deleted meanwhile
	}
	if err != nil {
		return Assignment{}, fmt.Errorf("create assignment: %w", err)
	}
	a.Progress = &Progress{}
	return a, nil
}

func or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

func setInt(dst *int, v *int) {
	if v != nil {
		*dst = *v
	}
}

// validate checks an assignment's terms.
func validate(a Assignment) error {
	switch {
	case a.OpensAt.IsZero():
		return errs.Invalid("opensAt", "is required")
	case a.ClosesAt.IsZero():
		return errs.Invalid("closesAt", "is required")
	case !a.ClosesAt.After(a.OpensAt):
		return errs.Invalid("closesAt", "must be after opensAt")
	case a.TimeLimitMinutes < 0 || a.TimeLimitMinutes > MaxTimeLimitMinutes:
		return errs.Invalid("timeLimitMinutes", "must be between 0 (no limit) and %d", MaxTimeLimitMinutes)
	case a.MaxAttempts < 1 || a.MaxAttempts > MaxAttempts:
		return errs.Invalid("maxAttempts", "must be between 1 and %d", MaxAttempts)
	case a.GraceSeconds < 0 || a.GraceSeconds > MaxGraceSeconds:
		return errs.Invalid("graceSeconds", "must be between 0 and %d", MaxGraceSeconds)
	case a.Overdue != OverdueAutosubmit && a.Overdue != OverdueDiscard:
		return errs.Invalid("overdue", "must be autosubmit or discard")
	case a.ShowResults != ShowNever && a.ShowResults != ShowAfterSubmit && a.ShowResults != ShowAfterClose:
		return errs.Invalid("showResults", "must be never, after_submit or after_close")
	case len(a.ClassIDs)+len(a.UserIDs) == 0:
		return errs.Invalid("classIds", "at least one class or user must be given the assignment")
	case len(a.ClassIDs)+len(a.UserIDs) > MaxAssignees:
		return errs.Invalid("userIds", "at most %d classes and users in all", MaxAssignees)
	}
	for i, id := range a.ClassIDs {
		if !ids.Valid(ids.Class, id) {
			return errs.Invalid(fmt.Sprintf("classIds.%d", i), "must be a class id (cls_...)")
		}
	}
	for i, id := range a.UserIDs {
		if !ids.Valid(ids.User, id) {
			return errs.Invalid(fmt.Sprintf("userIds.%d", i), "must be a user id (usr_...)")
		}
	}
	return nil
}

// checkAssignees verifies that the classes and users exist in the caller's
// organization (a teacher may give an assignment only to classes they
// teach) and keeps them from being deleted until ctx's transaction ends.
func (s *Service) checkAssignees(ctx context.Context, caller *tenancy.Caller, classIDs, userIDs []string) error {
	q := s.db.Q(ctx)
	if len(classIDs) > 0 {
		found, err := collectIDs(q.Query(ctx, `
			SELECT c.id FROM classes c
			 WHERE c.org_id = app_org_id() AND c.id = ANY($1)
			   AND ($2 OR EXISTS (SELECT 1 FROM class_members m WHERE m.class_id = c.id AND m.user_id = $3 AND m.role = 'teacher'))
			   FOR KEY SHARE OF c`, classIDs, caller.Role != tenancy.RoleTeacher, caller.UserID))
		if err != nil {
			return err
		}
		if i := missing(classIDs, found); i >= 0 {
			return errs.Invalid(fmt.Sprintf("classIds.%d", i), "names no class of yours")
		}
	}
	if len(userIDs) > 0 {
		found, err := collectIDs(q.Query(ctx, `SELECT id FROM users WHERE org_id = app_org_id() AND id = ANY($1) FOR KEY SHARE`, userIDs))
		if err != nil {
			return err
		}
		if i := missing(userIDs, found); i >= 0 {
			return errs.Invalid(fmt.Sprintf("userIds.%d", i), "names no user of this organization")
		}
	}
	return nil
}

func collectIDs(rows pgx.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// missing returns the index of the first of want not in found, or -1.
func missing(want, found []string) int {
	for i, id := range want {
		if !slices.Contains(found, id) {
			return i
		}
	}
	return -1
}

// setAssignees replaces the assignment's classes and users with the sets
// that are given (deduplicated, sorted as they read back).
func (s *Service) setAssignees(ctx context.Context, q store.Querier, id string, classIDs, userIDs *[]string) error {
	if classIDs != nil {
		*classIDs = dedupe(*classIDs)
		if _, err := q.Exec(ctx, `DELETE FROM assignment_classes WHERE org_id = app_org_id() AND assignment_id = $1`, id); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `INSERT INTO assignment_classes (assignment_id, class_id, org_id)
			SELECT $1, c, app_org_id() FROM unnest($2::text[]) AS c`, id, *classIDs); err != nil {
			return err
		}
	}
	if userIDs != nil {
		*userIDs = dedupe(*userIDs)
		if _, err := q.Exec(ctx, `DELETE FROM assignment_users WHERE org_id = app_org_id() AND assignment_id = $1`, id); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `INSERT INTO assignment_users (assignment_id, user_id, org_id)
			SELECT $1, u, app_org_id() FROM unnest($2::text[]) AS u`, id, *userIDs); err != nil {
			return err
		}
	}
	return nil
}

func dedupe(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}

// snapshot is an assignment's terms as its audit entries record them.
func snapshot(a Assignment) map[string]any {
	return map[string]any{"examId": a.ExamID, "classIds": a.ClassIDs, "userIds": a.UserIDs,
		"opensAt": a.OpensAt, "closesAt": a.ClosesAt, "timeLimitMinutes": a.TimeLimitMinutes,
		"maxAttempts": a.MaxAttempts, "shuffleQuestions": a.ShuffleQuestions, "shuffleOptions": a.ShuffleOptions,
		"graceSeconds": a.GraceSeconds, "overdue": a.Overdue, "showResults": a.ShowResults}
}

const assignmentColumns = `a.id, a.exam_id,
	coalesce((SELECT array_agg(class_id ORDER BY class_id) FROM assignment_classes WHERE assignment_id = a.id), '{}'),
	coalesce((SELECT array_agg(user_id ORDER BY user_id) FROM assignment_users WHERE assignment_id = a.id), '{}'),
	a.opens_at, a.closes_at, a.time_limit_minutes, a.max_attempts, a.shuffle_questions, a.shuffle_options,
	a.grace_seconds, a.overdue, a.show_results, a.created_by, a.created_at, a.updated_at`

func scanAssignment(row pgx.Row) (Assignment, error) {
	var a Assignment
	err := row.Scan(&a.ID, &a.ExamID, &a.ClassIDs, &a.UserIDs, &a.OpensAt, &a.ClosesAt, &a.TimeLimitMinutes,
		&a.MaxAttempts, &a.ShuffleQuestions, &a.ShuffleOptions, &a.GraceSeconds, &a.Overdue, &a.ShowResults,
		&a.CreatedBy, &a.CreatedAt, &a.UpdatedAt)
	return a, err
}

// assignedSQL is true when the user $N names is given assignment a: as a
// user of it, or as a student of one of its classes.
func assignedSQL(param string) string {
	return `(EXISTS (SELECT 1 FROM assignment_users au WHERE au.assignment_id = a.id AND au.user_id = ` + param + `)
	      OR EXISTS (SELECT 1 FROM assignment_classes ac JOIN class_members m ON m.class_id = ac.class_id
	                  WHERE ac.assignment_id = a.id AND m.user_id = ` + param + ` AND m.role = 'student'))`
}

// loadAssignment reads one assignment of the organization; with student
// set, only one given to that student (else not found).
func (s *Service) loadAssignment(ctx context.Context, q store.Querier, id, student string, lock store.RowLock) (Assignment, error) {
	if !ids.Valid(ids.Assignment, id) {
		return Assignment{}, errs.Invalid("id", "must be an assignment id (asg_...)")
	}
	sql := `SELECT ` + assignmentColumns + ` FROM assignments a
		 WHERE a.org_id = app_org_id() AND a.id = $1 AND ($2 = '' OR ` + assignedSQL("$2") + `)`
	if lock != store.NoLock {
		sql += string(lock) + ` OF a`
	}
	a, err := scanAssignment(q.QueryRow(ctx, sql, id, student))
	if errors.Is(err, pgx.ErrNoRows) {
		return Assignment{}, errs.NotFound("assignment")
	}
	if err != nil {
		return Assignment{}, fmt.Errorf("load assignment: %w", err)
	}
	return a, nil
}

// AssignedExam returns the exam of assignment id and whether the
// assignment is given to student. Like assessment.ExamExists it serves
// another service acting for an already authorized caller (an embed
// session being created) and checks no permission itself; an assignment
// of another organization is not found.
func (s *Service) AssignedExam(ctx context.Context, id, student string) (examID string, given bool, err error) {
	if !ids.Valid(ids.Assignment, id) {
		return "", false, errs.Invalid("assignmentId", "must be an assignment id (asg_...)")
	}
	err = s.db.Q(ctx).QueryRow(ctx, `SELECT a.exam_id, `+assignedSQL("$2")+` FROM assignments a
		 WHERE a.org_id = app_org_id() AND a.id = $1`, id, student).Scan(&examID, &given)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, errs.NotFound("assignment")
	}
	if err != nil {
		return "", false, fmt.Errorf("assigned exam: %w", err)
	}
	return examID, given, nil
}

// studentOf is the user whose assignments and attempts the caller may
// see: their own for a student, "" (all of the organization) for staff.
func studentOf(c *tenancy.Caller) string {
	if c.Role == tenancy.RoleStudent {
		return c.UserID
	}
	return ""
}

// Assignment returns an assignment: for staff with its progress, for a
// student only one given to them.
func (s *Service) Assignment(ctx context.Context, id string) (Assignment, error) {
	caller, err := tenancy.Authorize(ctx, ReadAssignments)
	if err != nil {
		return Assignment{}, err
	}
	q := s.db.Q(ctx)
	a, err := s.loadAssignment(ctx, q, id, studentOf(caller), store.NoLock)
	if err != nil || studentOf(caller) != "" {
		return a, err
	}
	p, err := s.progress(ctx, q, id)
	a.Progress = &p
	return a, err
}

// progress counts the assignment's students by their latest attempt.
func (s *Service) progress(ctx context.Context, q store.Querier, id string) (Progress, error) {
	var p Progress
	err := q.QueryRow(ctx, `
		WITH assigned AS (
		  SELECT user_id FROM assignment_users WHERE assignment_id = $1
		  UNION
		  SELECT m.user_id FROM assignment_classes ac JOIN class_members m ON m.class_id = ac.class_id
		   WHERE ac.assignment_id = $1 AND m.role = 'student'
		), latest AS (
		  SELECT DISTINCT ON (user_id) user_id, status FROM attempts
		   WHERE org_id = app_org_id() AND assignment_id = $1 ORDER BY user_id, number DESC
		)
		SELECT count(*), count(*) FILTER (WHERE l.status IS NULL), count(*) FILTER (WHERE l.status = 'in_progress'),
		       count(*) FILTER (WHERE l.status = 'submitted'), count(*) FILTER (WHERE l.status = 'discarded')
		  FROM assigned s LEFT JOIN latest l USING (user_id)`, id).
		Scan(&p.Assigned, &p.NotStarted, &p.InProgress, &p.Submitted, &p.Discarded)
	if err != nil {
		return Progress{}, fmt.Errorf("assignment progress: %w", err)
	}
	return p, nil
}

// AssignmentFilter narrows Assignments.
type AssignmentFilter struct {
	ExamID string
}

// Assignments lists assignments, newest first: all of the organization
// for staff, those given to them for a student.
func (s *Service) Assignments(ctx context.Context, f AssignmentFilter, p paging.Page) ([]Assignment, string, error) {
	caller, err := tenancy.Authorize(ctx, ReadAssignments)
	if err != nil {
		return nil, "", err
	}
	if f.ExamID != "" && !ids.Valid(ids.Exam, f.ExamID) {
		return nil, "", errs.Invalid("examId", "must be an exam id (exm_...)")
	}
	after := p.After
	if after == "" {
		after = "\uffff" // newest first: every id sorts before it
	}
	out, next, err := store.ListPage(ctx, s.db.Q(ctx), p, scanAssignment, func(a Assignment) string { return a.ID }, `
		SELECT `+assignmentColumns+` FROM assignments a
		 WHERE a.org_id = app_org_id() AND ($1 = '' OR a.exam_id = $1) AND ($2 = '' OR `+assignedSQL("$2")+`)
		   AND a.id < $3
		 ORDER BY a.id DESC LIMIT $4`, f.ExamID, studentOf(caller), after, p.Limit())
	if err != nil {
		return nil, "", fmt.Errorf("list assignments: %w", err)
	}
	return out, next, nil
}

// UpdateAssignment changes an assignment's terms. Attempts in progress are
// extended to the new terms when those give them more time, never
// shortened.
func (s *Service) UpdateAssignment(ctx context.Context, id string, in AssignmentPatch) (Assignment, error) {
	caller, err := tenancy.Authorize(ctx, WriteAssignments)
	if err != nil {
		return Assignment{}, err
	}
	var a Assignment
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		before, err := s.loadAssignment(ctx, q, id, "", store.ForNoKeyUpdate)
		if err != nil {
			return err
		}
		a = before
		if in.ClassIDs != nil {
			a.ClassIDs = *in.ClassIDs
		}
		if in.UserIDs != nil {
			a.UserIDs = *in.UserIDs
		}
		setTime(&a.OpensAt, in.OpensAt)
		setTime(&a.ClosesAt, in.ClosesAt)
		setInt(&a.TimeLimitMinutes, in.TimeLimitMinutes)
		setInt(&a.MaxAttempts, in.MaxAttempts)
		setInt(&a.GraceSeconds, in.GraceSeconds)
		setBool(&a.ShuffleQuestions, in.ShuffleQuestions)
		setBool(&a.ShuffleOptions, in.ShuffleOptions)
		setString(&a.Overdue, in.Overdue)
		setString(&a.ShowResults, in.ShowResults)
		if err := validate(a); err != nil {
			return err
		}
		if err := s.checkAssignees(ctx, caller, newOnly(in.ClassIDs, before.ClassIDs), newOnly(in.UserIDs, before.UserIDs)); err != nil {
			return err
		}
		if err := q.QueryRow(ctx, `
			UPDATE assignments SET opens_at = $2, closes_at = $3, time_limit_minutes = $4, max_attempts = $5,
			       shuffle_questions = $6, shuffle_options = $7, grace_seconds = $8, overdue = $9, show_results = $10,
			       updated_at = now()
			 WHERE org_id = app_org_id() AND id = $1 RETURNING updated_at`,
			id, a.OpensAt, a.ClosesAt, a.TimeLimitMinutes, a.MaxAttempts, a.ShuffleQuestions, a.ShuffleOptions,
			a.GraceSeconds, a.Overdue, a.ShowResults).Scan(&a.UpdatedAt); err != nil {
			return err
		}
		if err := s.setAssignees(ctx, q, id, in.ClassIDs, in.UserIDs); err != nil {
			return err
		}
		if err := s.extendRunning(ctx, q, id, ""); err != nil {
			return err
		}
		p, err := s.progress(ctx, q, id)
		a.Progress = &p
		if err != nil {
			return err
		}
		return audit.Record(ctx, s.db, audit.Entry{Action: "assignment.updated", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "assignment", ID: id}, Before: snapshot(before), After: snapshot(a)})
	})
	if err != nil {
		return Assignment{}, fmt.Errorf("update assignment: %w", err)
	}
	return a, nil
}

// newOnly returns the ids of a replacement set that the old set lacks:
// the assignees a change adds, which must be checked; nil when the set is
// not replaced.
func newOnly(replacement *[]string, old []string) []string {
	if replacement == nil {
		return nil
	}
	var out []string
	for _, id := range *replacement {
		if !slices.Contains(old, id) {
			out = append(out, id)
		}
	}
	return out
}

func setTime(dst *time.Time, v *time.Time) {
	if v != nil {
		*dst = *v
	}
}

func setBool(dst *bool, v *bool) {
	if v != nil {
		*dst = *v
	}
}

func setString(dst *string, v *string) {
	if v != nil {
		*dst = *v
	}
}

// extendRunning gives the assignment's attempts in progress (of one
// student, when student is set) the deadline and grace of the terms as
// they are now, when those are later: a change never shortens a running
// attempt. Their deadline workflows find the later deadline when they
// wake and sleep on.
func (s *Service) extendRunning(ctx context.Context, q store.Querier, id, student string) error {
	_, err := q.Exec(ctx, `
		UPDATE attempts t
		   SET deadline = greatest(t.deadline, attempt_deadline(t.assignment_id, t.user_id, t.started_at)),
		       grace_seconds = greatest(t.grace_seconds, a.grace_seconds), updated_at = now()
		  FROM assignments a
		 WHERE a.id = t.assignment_id AND t.org_id = app_org_id() AND t.assignment_id = $1
		   AND ($2 = '' OR t.user_id = $2) AND t.status = 'in_progress'`, id, student)
	if err != nil {
		return fmt.Errorf("extend running attempts: %w", err)
	}
	return nil
}

// DeleteAssignment deletes an assignment with its attempts; results
// submitted from them stay.
func (s *Service) DeleteAssignment(ctx context.Context, id string) error {
	caller, err := tenancy.Authorize(ctx, WriteAssignments)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		a, err := s.loadAssignment(ctx, q, id, "", store.ForUpdate)
		if err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `DELETE FROM assignments WHERE org_id = app_org_id() AND id = $1`, id); err != nil {
			return fmt.Errorf("delete assignment: %w", err)
		}
		return audit.Record(ctx, s.db, audit.Entry{Action: "assignment.deleted", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "assignment", ID: id}, Before: snapshot(a)})
	})
}
