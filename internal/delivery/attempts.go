package delivery

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/webhooks/event"
	"github.com/assessd/assessd/tenancy"
)

// Bounds of a saved response, as a submitted answer's (assessment).
const (
	MaxValueBytes = 64 << 10
	MaxFiles      = 20
	maxURLLen     = 2000
)

// errClosed is the answer to a save or submission the attempt no longer
// takes.
func errClosed(a Attempt) error {
	switch a.Status {
	case StatusSubmitted:
		return errs.Conflict("ATTEMPT_CLOSED", "the attempt was submitted")
	case StatusDiscarded:
		return errs.Conflict("ATTEMPT_CLOSED", "the attempt was discarded when its time ran out")
	}
	return errs.Conflict("ATTEMPT_CLOSED", "the attempt's time ran out at %s", a.Deadline.UTC().Format(time.RFC3339))
}

const attemptColumns = `t.id, t.assignment_id, t.exam_id, t.user_id, t.number, t.status, t.seed, t.question_ids,
	t.shuffle_options, t.started_at, t.deadline, t.grace_seconds, t.overdue, t.region, t.submitted_at,
	coalesce(t.submitted_by, ''), coalesce(t.result_id, ''), now()`

func scanAttempt(row pgx.Row) (Attempt, error) {
	var a Attempt
	var submitted *time.Time
	err := row.Scan(&a.ID, &a.AssignmentID, &a.ExamID, &a.UserID, &a.Number, &a.Status, &a.Seed, &a.QuestionIDs,
		&a.ShuffleOptions, &a.StartedAt, &a.Deadline, &a.GraceSeconds, &a.Overdue, &a.Region, &submitted,
		&a.SubmittedBy, &a.ResultID, &a.ServerTime)
	if submitted != nil {
		a.SubmittedAt = *submitted
	}
	return a, err
}

// loadAttempt reads one attempt of the organization; with student set,
// only that student's (else not found).
func (s *Service) loadAttempt(ctx context.Context, q store.Querier, id, student string, lock store.RowLock) (Attempt, error) {
	if !ids.Valid(ids.Attempt, id) {
		return Attempt{}, errs.Invalid("id", "must be an attempt id (att_...)")
	}
	a, err := scanAttempt(q.QueryRow(ctx, `SELECT `+attemptColumns+` FROM attempts t
		 WHERE t.org_id = app_org_id() AND t.id = $1 AND ($2 = '' OR t.user_id = $2)`+string(lock), id, student))
	if errors.Is(err, pgx.ErrNoRows) {
		return Attempt{}, errs.NotFound("attempt")
	}
	if err != nil {
		return Attempt{}, fmt.Errorf("load attempt: %w", err)
	}
	return a, nil
}

// StartAttempt starts student's attempt of an assignment (the caller's
// own when student is ""; staff may start one for a student). An attempt
// in progress is returned instead of starting another, so two tabs
// starting at once get one attempt.
func (s *Service) StartAttempt(ctx context.Context, assignmentID, student string) (Attempt, error) {
	caller, err := tenancy.Authorize(ctx, WriteAttempts)
	if err != nil {
		return Attempt{}, err
	}
	switch {
	case student == "" || student == caller.UserID:
		student = caller.UserID
	case caller.Role == tenancy.RoleStudent:
		return Attempt{}, errs.Forbidden("ROLE_NOT_ALLOWED", "students may start only their own attempts")
	case !ids.Valid(ids.User, student):
		return Attempt{}, errs.Invalid("userId", "must be a user id (usr_...)")
	}
	var a Attempt
	var started bool
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		a, started, err = s.start(ctx, caller, assignmentID, student)
		return err
	})
	if store.ForeignKey(err) != "" {
		return Attempt{}, errs.NotFound("assignment") // the assignment or the student was deleted meanwhile
	}
	if err != nil {
		return Attempt{}, fmt.Errorf("start attempt: %w", err)
	}
	if started {
		s.Metrics.attemptStarted(caller.OrgID)
	}
	return s.withContent(ctx, a)
}

// terms are an assignment's rules for one student now, accommodation
// included.
type terms struct {
	Assignment
	closes      time.Time
	maxAttempts int
	used        int
	now         time.Time
	region      string
}

func (s *Service) start(ctx context.Context, caller *tenancy.Caller, assignmentID, student string) (Attempt, bool, error) {
	q := s.db.Q(ctx)
	var t terms
	var err error
	// The assignment is read as the student sees it: one not given to
	// them is not found, whoever starts the attempt.
	if t.Assignment, err = s.loadAssignment(ctx, q, assignmentID, student, store.ForKeyShare); err != nil {
		if caller.UserID != student && errs.Is(err, errs.KindNotFound) {
			if _, err := s.loadAssignment(ctx, q, assignmentID, "", store.NoLock); err == nil {
				return Attempt{}, false, errs.Invalid("userId", "is not given this assignment")
			}
		}
		return Attempt{}, false, err
	}
	if a, err := s.inProgress(ctx, q, assignmentID, student); err == nil || !errors.Is(err, pgx.ErrNoRows) {
		return a, false, err
	}
	if err := q.QueryRow(ctx, `
		SELECT greatest(a.closes_at, coalesce(c.closes_at, a.closes_at)), coalesce(c.max_attempts, a.max_attempts),
		       (SELECT count(*) FROM attempts t WHERE t.assignment_id = a.id AND t.user_id = $2), now(), `+tenancy.AIRegionSQL+`
		  FROM assignments a LEFT JOIN accommodations c ON c.assignment_id = a.id AND c.user_id = $2
		 WHERE a.org_id = app_org_id() AND a.id = $1`, assignmentID, student).
		Scan(&t.closes, &t.maxAttempts, &t.used, &t.now, &t.region); err != nil {
		return Attempt{}, false, err
	}
	switch {
	case t.now.Before(t.OpensAt):
		return Attempt{}, false, errs.Conflict("ASSIGNMENT_NOT_OPEN", "the assignment opens at %s", t.OpensAt.UTC().Format(time.RFC3339))
	case !t.now.Before(t.closes):
		return Attempt{}, false, errs.Conflict("ASSIGNMENT_CLOSED", "the assignment closed at %s", t.closes.UTC().Format(time.RFC3339))
	case t.used >= t.maxAttempts:
		// Each statement reads its own snapshot: a start in another tab
		// may have committed between the look for one in progress and
		// the count, and that attempt is the answer.
		if a, err := s.inProgress(ctx, q, assignmentID, student); err == nil || !errors.Is(err, pgx.ErrNoRows) {
			return a, false, err
		}
		return Attempt{}, false, errs.Conflict("ATTEMPTS_EXHAUSTED", "all %d attempts of the assignment were used", t.maxAttempts)
	}
	_, sheet, err := s.content.Sheet(ctx, t.ExamID)
	if err != nil {
		return Attempt{}, false, err
	}
	if len(sheet) == 0 {
		return Attempt{}, false, errs.FailedPrecondition("EXAM_EMPTY", "the exam has no question to answer")
	}
	a := Attempt{ID: ids.New(ids.Attempt), Seed: newSeed()}
	for _, qu := range sheet {
		a.QuestionIDs = append(a.QuestionIDs, qu.ID)
	}
	if t.ShuffleQuestions {
		shuffle(a.Seed, "", a.QuestionIDs)
	}
	// A concurrent start of the same student's attempt (another tab)
	// conflicts on the one-in-progress index or the attempt number: this
	// one then returns the other's attempt.
	a, err = scanAttempt(q.QueryRow(ctx, `
		WITH t AS (
		  INSERT INTO attempts (id, org_id, assignment_id, exam_id, user_id, number, status, seed, question_ids, shuffle_options,
		                        started_at, deadline, grace_seconds, overdue, region, started_by)
		  VALUES ($1, app_org_id(), $2, $3, $4, $5, 'in_progress', $6, $7, $8, now(), attempt_deadline($2, $4, now()), $9, $10, $11, $12)
		  ON CONFLICT DO NOTHING
		  RETURNING *)
		SELECT `+attemptColumns+` FROM t`,
		a.ID, assignmentID, t.ExamID, student, t.used+1, a.Seed, a.QuestionIDs, t.ShuffleOptions, t.GraceSeconds, t.Overdue,
		t.region, caller.UserID))
	if errors.Is(err, pgx.ErrNoRows) {
		if a, err := s.inProgress(ctx, q, assignmentID, student); err == nil {
			return a, false, nil
		}
		return Attempt{}, false, errs.Conflict("CONCURRENT_UPDATE", "another attempt of the assignment was started at the same time; start again")
	}
	if err != nil {
		return Attempt{}, false, err
	}
	if err := outbox.Add(ctx, q, outbox.KindAttempt, a.ID, a.Region); err != nil {
		return Attempt{}, false, err
	}
	if err := audit.Record(ctx, s.db, audit.Entry{Action: "attempt.started", Actor: tenancy.ActorOf(caller),
		Target: audit.Target{Type: "attempt", ID: a.ID}, After: map[string]any{"assignmentId": assignmentID,
			"userId": student, "number": a.Number, "deadline": a.Deadline}}); err != nil {
		return Attempt{}, false, err
	}
	return a, true, s.Events.Record(ctx, s.db, event.AttemptStarted, a)
}

// inProgress reads the student's attempt in progress of the assignment;
// pgx.ErrNoRows when there is none.
func (s *Service) inProgress(ctx context.Context, q store.Querier, assignmentID, student string) (Attempt, error) {
	return scanAttempt(q.QueryRow(ctx, `SELECT `+attemptColumns+` FROM attempts t
		 WHERE t.org_id = app_org_id() AND t.assignment_id = $1 AND t.user_id = $2 AND t.status = 'in_progress'`,
		assignmentID, student))
}

// newSeed is an attempt's seed: unpredictable, so students cannot work out
// each other's order.
func newSeed() int64 {
	var b [8]byte
	_, _ = crand.Read(b[:]) // never fails (crypto/rand)
	return int64(binary.LittleEndian.Uint64(b[:]) >> 1)
}

// shuffle permutes ids in place, the same way for the same seed and salt.
func shuffle(seed int64, salt string, ids []string) {
	var h uint64 = 14695981039346656037 // FNV-1a of salt: each question's options get their own order
	for i := 0; i < len(salt); i++ {
		h = (h ^ uint64(salt[i])) * 1099511628211
	}
	// A seeded generator on purpose: the order must be the same on every
	// read; the seed itself comes from crypto/rand.
	r := rand.New(rand.NewPCG(uint64(seed), h)) //nolint:gosec // G404: a reproducible order, not a secret
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
}

// Attempt returns an attempt with its questions and responses; a student
// reads only their own.
func (s *Service) Attempt(ctx context.Context, id string) (Attempt, error) {
	caller, err := tenancy.Authorize(ctx, ReadAttempts)
	if err != nil {
		return Attempt{}, err
	}
	a, err := s.loadAttempt(ctx, s.db.Q(ctx), id, studentOf(caller), store.NoLock)
	if err != nil {
		return Attempt{}, err
	}
	return s.withContent(ctx, a)
}

// withContent adds the attempt's questions, in its order and as a student
// sees them, and its saved responses. A question deleted since the start
// is left out; one added since is not part of the attempt.
func (s *Service) withContent(ctx context.Context, a Attempt) (Attempt, error) {
	exam, sheet, err := s.content.Sheet(ctx, a.ExamID)
	if errs.Is(err, errs.KindNotFound) {
		sheet, err = nil, nil // the exam is being deleted with the attempt
	}
	if err != nil {
		return Attempt{}, err
	}
	a.ExamName, a.Questions = exam.Name, ordered(a, sheet)
	rows, err := s.db.Q(ctx).Query(ctx, `SELECT question_id, value, files, saved_at, revision FROM attempt_responses
		 WHERE org_id = app_org_id() AND attempt_id = $1`, a.ID)
	if err != nil {
		return Attempt{}, fmt.Errorf("read responses: %w", err)
	}
	a.Responses, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Response, error) {
		var p Response
		err := r.Scan(&p.QuestionID, &p.Value, &p.Files, &p.SavedAt, &p.Revision)
		return p, err
	})
	if err != nil {
		return Attempt{}, fmt.Errorf("read responses: %w", err)
	}
	position := map[string]int{}
	for i, id := range a.QuestionIDs {
		position[id] = i
	}
	slices.SortFunc(a.Responses, func(x, y Response) int { return position[x.QuestionID] - position[y.QuestionID] })
	return a, nil
}

// ordered is the sheet's questions of the attempt in its order, options
// shuffled per question when the attempt asks.
func ordered(a Attempt, sheet []assessment.SheetQuestion) []assessment.SheetQuestion {
	byID := make(map[string]assessment.SheetQuestion, len(sheet))
	for _, q := range sheet {
		byID[q.ID] = q
	}
	out := make([]assessment.SheetQuestion, 0, len(a.QuestionIDs))
	for _, id := range a.QuestionIDs {
		q, ok := byID[id]
		if !ok {
			continue
		}
		if a.ShuffleOptions && len(q.Options) > 1 {
			q.Options = slices.Clone(q.Options)
			order := make([]string, len(q.Options))
			for i, o := range q.Options {
				order[i] = o.ID
			}
			shuffle(a.Seed, q.ID, order)
			slices.SortFunc(q.Options, func(x, y assessment.SheetOption) int {
				return slices.Index(order, x.ID) - slices.Index(order, y.ID)
			})
		}
		out = append(out, q)
	}
	return out
}

// Attempts lists an assignment's attempts, oldest first, without their
// questions and responses (staff).
func (s *Service) Attempts(ctx context.Context, assignmentID string, f AttemptFilter, p paging.Page) ([]Attempt, string, error) {
	if _, err := tenancy.Authorize(ctx, ReadStudentsAttempts); err != nil {
		return nil, "", err
	}
	switch {
	case f.UserID != "" && !ids.Valid(ids.User, f.UserID):
		return nil, "", errs.Invalid("userId", "must be a user id (usr_...)")
	case f.Status != "" && f.Status != StatusInProgress && f.Status != StatusSubmitted && f.Status != StatusDiscarded:
		return nil, "", errs.Invalid("status", "must be in_progress, submitted or discarded")
	}
	q := s.db.Q(ctx)
	if _, err := s.loadAssignment(ctx, q, assignmentID, "", store.NoLock); err != nil {
		return nil, "", err
	}
	out, next, err := store.ListPage(ctx, q, p, scanAttempt, func(a Attempt) string { return a.ID }, `
		SELECT `+attemptColumns+` FROM attempts t
		 WHERE t.org_id = app_org_id() AND t.assignment_id = $1 AND ($2 = '' OR t.user_id = $2) AND ($3 = '' OR t.status = $3)
		   AND t.id > $4
		 ORDER BY t.id LIMIT $5`, assignmentID, f.UserID, f.Status, p.After, p.Limit())
	if err != nil {
		return nil, "", fmt.Errorf("list attempts: %w", err)
	}
	return out, next, nil
}

// AttemptFilter narrows Attempts.
type AttemptFilter struct {
	UserID, Status string
}

// NewResponse is a save of one question's response.
type NewResponse struct {
	Value any
	Files []string
	// ExpectedRevision, when set, takes the save only if the question's
	// saved revision is still this one (0: nothing saved yet).
	ExpectedRevision *int
}

// SaveResponse saves the response to one question of an attempt. It is
// one statement, committed before it answers: the attempt's row is read
// FOR SHARE, so a save either commits before a submission reads the
// responses or finds the attempt submitted.
func (s *Service) SaveResponse(ctx context.Context, attemptID, questionID string, in NewResponse) (Response, error) {
	began := time.Now()
	caller, err := tenancy.Authorize(ctx, WriteAttempts)
	if err != nil {
		return Response{}, err
	}
	r, outcome, err := s.save(ctx, caller, attemptID, questionID, in)
	s.Metrics.saved(caller.OrgID, outcome, began)
	return r, err
}

func (s *Service) save(ctx context.Context, caller *tenancy.Caller, attemptID, questionID string, in NewResponse) (Response, string, error) {
	if !ids.Valid(ids.Attempt, attemptID) {
		return Response{}, saveRefused, errs.Invalid("attemptId", "must be an attempt id (att_...)")
	}
	if !ids.Valid(ids.Question, questionID) {
		return Response{}, saveRefused, errs.Invalid("questionId", "must be a question id (qst_...)")
	}
	value, files, err := encodeResponse(in)
	if err != nil {
		return Response{}, saveRefused, err
	}
	var (
		status       string
		open, inExam bool
		revision     *int
		savedAt      *time.Time
		deadline     time.Time
	)
	err = s.db.Q(ctx).QueryRow(ctx, `
		WITH t AS (
		  SELECT id, status, question_ids, deadline, now() <= deadline + grace_seconds * interval '1 second' AS open
		    FROM attempts WHERE org_id = app_org_id() AND id = $1 AND ($5 = '' OR user_id = $5)
		     FOR SHARE
		), saved AS (
		  INSERT INTO attempt_responses AS r (attempt_id, question_id, org_id, value, files, revision)
		  SELECT t.id, $2, app_org_id(), $3::jsonb, $4::jsonb, 1 FROM t
		   WHERE t.status = 'in_progress' AND t.open AND $2 = ANY(t.question_ids)
		     AND ($6::int IS NULL OR $6 = 0
		          OR EXISTS (SELECT 1 FROM attempt_responses e WHERE e.attempt_id = t.id AND e.question_id = $2))
		  ON CONFLICT (attempt_id, question_id) DO UPDATE
		     SET value = excluded.value, files = excluded.files, revision = r.revision + 1, saved_at = now()
		   WHERE $6::int IS NULL OR r.revision = $6
		  RETURNING revision, saved_at)
		SELECT t.status, t.open, $2 = ANY(t.question_ids), t.deadline, saved.revision, saved.saved_at
		  FROM t LEFT JOIN saved ON true`,
		attemptID, questionID, value, files, studentOf(caller), in.ExpectedRevision).
		Scan(&status, &open, &inExam, &deadline, &revision, &savedAt)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Response{}, saveNotFound, errs.NotFound("attempt")
	case err != nil:
		return Response{}, "", fmt.Errorf("save response: %w", err)
	case revision != nil:
		return Response{QuestionID: questionID, Value: in.Value, Files: in.Files, SavedAt: *savedAt, Revision: *revision}, saveOK, nil
	case status != StatusInProgress || !open:
		return Response{}, saveClosed, errClosed(Attempt{Status: status, Deadline: deadline})
	case !inExam:
		return Response{}, saveRefused, errs.Invalid("questionId", "names no question of this attempt")
	}
	return Response{}, saveRefused, errs.Conflict("RESPONSE_CHANGED", "the response was saved again since revision %d; read the attempt and save again", *in.ExpectedRevision)
}

// encodeResponse checks a response's bounds, as a submitted answer's, and
// encodes its value and files as the database keeps them.
func encodeResponse(in NewResponse) (value *string, files string, err error) {
	if in.ExpectedRevision != nil && *in.ExpectedRevision < 0 {
		return nil, "", errs.Invalid("expectedRevision", "must be 0 or more")
	}
	if in.Value != nil {
		b, err := json.Marshal(in.Value)
		if err != nil {
			return nil, "", errs.Invalid("value", "must be a JSON value")
		}
		if len(b) > MaxValueBytes {
			return nil, "", errs.Invalid("value", "must be at most %d bytes of JSON", MaxValueBytes)
		}
		value = new(string(b))
	}
	if len(in.Files) > MaxFiles {
		return nil, "", errs.Invalid("files", "may list at most %d files", MaxFiles)
	}
	for i, f := range in.Files {
		u, err := url.Parse(f)
		switch {
		case err != nil || len(f) > maxURLLen || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
			return nil, "", errs.Invalid(fmt.Sprintf("files.%d", i), "must be an absolute http(s) URL")
		case slices.Contains(in.Files[:i], f):
			return nil, "", errs.Invalid(fmt.Sprintf("files.%d", i), "lists a file already listed")
		}
	}
	b, _ := json.Marshal(in.Files)
	if in.Files == nil {
		b = []byte("[]")
	}
	return value, string(b), nil
}

// SubmitAttempt submits an attempt with what was saved and returns it with
// its result. Submitting again returns the same attempt; an attempt whose
// time ran out is closed as its deadline would close it.
func (s *Service) SubmitAttempt(ctx context.Context, id string) (Attempt, error) {
	caller, err := tenancy.Authorize(ctx, WriteAttempts)
	if err != nil {
		return Attempt{}, err
	}
	by := ByStudent
	if caller.Role != tenancy.RoleStudent {
		by = ByStaff
	}
	var a Attempt
	var finished bool
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		if a, err = s.loadAttempt(ctx, q, id, studentOf(caller), store.ForNoKeyUpdate); err != nil {
			return err
		}
		switch {
		case a.Status == StatusSubmitted:
			return nil
		case a.Status == StatusDiscarded:
			return errClosed(a)
		case a.ServerTime.After(a.Closes()):
			// Late: closed as the deadline closes it, by the system.
			caller, by = deadlineCaller(caller.OrgID), BySystem
			if a.Overdue == OverdueDiscard {
				finished = true
				return s.discard(ctx, q, caller, &a)
			}
		}
		finished = true
		return s.submit(ctx, caller, &a, by)
	})
	if err != nil {
		return Attempt{}, fmt.Errorf("submit attempt: %w", err)
	}
	if finished {
		s.Metrics.attemptFinished(caller.OrgID, a.Status, a.SubmittedBy)
	}
	if a.Status == StatusDiscarded {
		return Attempt{}, errClosed(a)
	}
	return s.withContent(ctx, a)
}

// deadlineCaller is the system acting when an attempt's time runs out.
func deadlineCaller(orgID string) *tenancy.Caller {
	return &tenancy.Caller{Kind: tenancy.KindSystem, OrgID: orgID, UserID: "deadline", Role: tenancy.RoleOwner, Scopes: tenancy.AllScopes}
}

// submit makes a's saved responses its result, through the results' own
// path in ctx's transaction, and marks a submitted (a is locked).
func (s *Service) submit(ctx context.Context, caller *tenancy.Caller, a *Attempt, by string) error {
	full, err := s.withContent(ctx, *a)
	if err != nil {
		return err
	}
	in := assessment.NewResult{UserID: a.UserID, Source: assessment.SourceAttempt, AttemptID: a.ID, AssignmentID: a.AssignmentID}
	asked := map[string]assessment.SheetQuestion{}
	for _, q := range full.Questions {
		asked[q.ID] = q
	}
	for _, r := range full.Responses {
		q, ok := asked[r.QuestionID]
		if !ok {
			continue // deleted from the exam since it was saved
		}
		files := r.Files
		if q.MaxFiles > 0 && len(files) > q.MaxFiles {
			files = files[:q.MaxFiles] // the question takes fewer files than when they were saved
		}
		in.Answers = append(in.Answers, assessment.NewAnswer{QuestionID: r.QuestionID, Value: r.Value, Files: files})
	}
	result, err := s.content.SubmitFor(ctx, caller, a.ExamID, in)
	if err != nil {
		return err
	}
	if err := s.db.Q(ctx).QueryRow(ctx, `
		UPDATE attempts SET status = 'submitted', submitted_at = now(), submitted_by = $2, result_id = $3, updated_at = now()
		 WHERE org_id = app_org_id() AND id = $1 RETURNING status, submitted_at, submitted_by, result_id`,
		a.ID, by, result.ID).Scan(&a.Status, &a.SubmittedAt, &a.SubmittedBy, &a.ResultID); err != nil {
		return err
	}
	if err := audit.Record(ctx, s.db, audit.Entry{Action: "attempt.submitted", Actor: tenancy.ActorOf(caller),
		Target: audit.Target{Type: "attempt", ID: a.ID}, After: map[string]any{"assignmentId": a.AssignmentID,
			"userId": a.UserID, "resultId": a.ResultID, "submittedBy": by}}); err != nil {
		return err
	}
	return s.Events.Record(ctx, s.db, event.AttemptSubmitted, *a)
}

// discard closes a without a result (overdue policy discard; a is locked).
func (s *Service) discard(ctx context.Context, q store.Querier, caller *tenancy.Caller, a *Attempt) error {
	if err := q.QueryRow(ctx, `
		UPDATE attempts SET status = 'discarded', submitted_at = now(), submitted_by = 'system', updated_at = now()
		 WHERE org_id = app_org_id() AND id = $1 RETURNING status, submitted_at, submitted_by`, a.ID).
		Scan(&a.Status, &a.SubmittedAt, &a.SubmittedBy); err != nil {
		return err
	}
	return audit.Record(ctx, s.db, audit.Entry{Action: "attempt.discarded", Actor: tenancy.ActorOf(caller),
		Target: audit.Target{Type: "attempt", ID: a.ID}, After: map[string]any{"assignmentId": a.AssignmentID, "userId": a.UserID}})
}

// Closing is what Close found: whether the attempt is closed (submitted,
// discarded or gone), and otherwise when saves stop being taken.
type Closing struct {
	Closed bool
	// Status is the attempt's status once closed ("" when it is gone).
	Status string
	// Until is deadline + grace of an attempt still open.
	Until time.Time
}

// Unfinished returns those of ids still in progress, the outbox route's
// unfinished subjects (ctx is scoped to their organization).
func (s *Service) Unfinished(ctx context.Context, ids []string) ([]string, error) {
	return store.Strings(ctx, s.db.Q(ctx), `
		SELECT id FROM attempts WHERE org_id = app_org_id() AND id = ANY($1) AND status = 'in_progress'`, ids)
}

// Close is the deadline workflow's step (ctx is scoped to the attempt's
// organization): an attempt still in progress after deadline + grace is
// submitted by the system with what was saved, or discarded, as its
// assignment's overdue policy says; one still open answers when it closes
// (its deadline may have been extended since the workflow last looked).
// It does nothing to an attempt already closed, so retries are harmless.
func (s *Service) Close(ctx context.Context, orgID, id string) (Closing, error) {
	caller := deadlineCaller(orgID)
	ctx = tenancy.WithCaller(store.WithOrg(ctx, orgID), caller)
	var c Closing
	var a Attempt
	var closedNow bool
	err := s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		var err error
		a, err = s.loadAttempt(ctx, q, id, "", store.ForNoKeyUpdate)
		switch {
		case errs.Is(err, errs.KindNotFound):
			c = Closing{Closed: true} // deleted with its assignment
			return nil
		case err != nil:
			return err
		case a.Status != StatusInProgress:
			c = Closing{Closed: true, Status: a.Status}
			return nil
		case !a.ServerTime.After(a.Closes()):
			c = Closing{Until: a.Closes()}
			return nil
		case a.Overdue == OverdueDiscard:
			err = s.discard(ctx, q, caller, &a)
		default:
			err = s.submit(ctx, caller, &a, BySystem)
		}
		c, closedNow = Closing{Closed: true, Status: a.Status}, true
		return err
	})
	if err != nil {
		return Closing{}, fmt.Errorf("close attempt %s: %w", id, err)
	}
	if closedNow {
		s.Metrics.attemptFinished(orgID, a.Status, BySystem)
	}
	return c, nil
}
