package assessment

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/assessment/expr"
	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/webhooks/event"
	"github.com/assessd/assessd/tenancy"
)

// Result and answer states.
const (
	StatusGrading = "grading" // some answer awaits AI grading
	StatusGraded  = "graded"
	StatusFailed  = "failed"

	AnswerPending = "pending" // awaits AI grading
	AnswerGraded  = "graded"
	AnswerFailed  = "failed"

	SourceAPI  = "api"  // submitted through the API
	SourceScan = "scan" // read from a scanned answer sheet
	// SourceAttempt is a submitted attempt of an assignment
	// (internal/delivery).
	SourceAttempt = "attempt"
)

// Result is one student's submission to an exam.
type Result struct {
	ID       string
	ExamID   string
	UserID   string
	Status   string
	Score    float64
	MaxScore float64
	Reason   string
	// Region is the AI region grading runs in: the organization's
	// aiRegion when the result was submitted.
	Region string
	// Source is how the answers came in: SourceAPI, or SourceScan for a
	// result read from a scanned answer sheet, SourceAttempt for a
	// submitted attempt.
	Source string
	// AttemptID and AssignmentID name the attempt a SourceAttempt result
	// was submitted from; AttemptID is "" once the attempt is deleted.
	AttemptID    string
	AssignmentID string
	SubmittedAt  time.Time
	GradedAt     time.Time
	Answers      []Answer
}

// Answer is the answer to one question of the exam, in exam order. Every
// question has one, answered or not.
type Answer struct {
	QuestionID string
	Value      any // nil when unanswered
	Files      []string
	Status     string
	Score      float64
	MaxScore   float64
	Feedback   string
	// QuestionRevision is the revision of the question the student
	// answered; MaxScore is that revision's points.
	QuestionRevision int
	// Grading holds the AI grading details: rationale, region, and the
	// files attached and skipped (with the reason); nil for rule scoring.
	Grading map[string]any
	// NeedsReview marks a scanned answer a person should check (and may
	// correct with CorrectAnswer).
	NeedsReview bool
	GradedAt    time.Time
}

// NewAnswer is one submitted answer.
type NewAnswer struct {
	QuestionID string
	Value      any
	Files      []string
}

// NewResult is the input of SubmitResult. UserID defaults to the caller,
// Source to SourceAPI.
type NewResult struct {
	UserID  string
	Source  string
	Answers []NewAnswer
	// AttemptID and AssignmentID name the attempt submitted (SourceAttempt).
	AttemptID, AssignmentID string
}

// ResultFilter narrows Results.
type ResultFilter struct {
	UserID string
	Status string
}

// Bounds of a submitted answer.
const (
	maxValueBytes = 64 << 10
	maxFiles      = 20
	maxURLLen     = 2000
)

// SubmitResult stores a submission and scores what rules can score: answers
// to questions whose type has a responseProcessing.condition are scored
// now; answers to AI-graded types stay pending, and the result is then
// "grading" until the grading workflow finishes it (decision 0023).
//
// It costs two round trips (decision 0081): one batch reads the exam, the
// user, the questions and their types; one batch writes the result, its
// answers, the audit entries and the grading request, all or nothing.
// When the exam's paper is cached, the read is skipped and the write
// checks that it is still current; if not, it reads and scores again
// (decision 0132). What it returns is built from what it wrote, not read
// back.
func (s *Service) SubmitResult(ctx context.Context, examID string, in NewResult) (Result, error) {
	caller, err := tenancy.Authorize(ctx, WriteResults)
	if err != nil {
		return Result{}, err
	}
	if in.UserID == "" {
		in.UserID = caller.UserID
	}
	if caller.Role == tenancy.RoleStudent && in.UserID != caller.UserID {
		return Result{}, errs.Forbidden("ROLE_NOT_ALLOWED", "students may submit only their own results")
	}
	if err := checkID("examId", ids.Exam, examID, "an exam"); err != nil {
		return Result{}, err
	}
	if err := checkID("userId", ids.User, in.UserID, "a user"); err != nil {
		return Result{}, err
	}
	return s.SubmitFor(ctx, caller, examID, in)
}

// SubmitFor is SubmitResult for a caller that another service authorized
// (an attempt's submission: the student holds attempts:write, the deadline
// workflow acts as the system), with in.UserID set. Inside ctx's
// transaction it writes with it: the attempt and its result commit
// together.
func (s *Service) SubmitFor(ctx context.Context, caller *tenancy.Caller, examID string, in NewResult) (Result, error) {
	r, cached, err := s.submit(ctx, caller, examID, in, false)
	// What a cached paper refused (an answer to a question it does not
	// hold) or the write found stale is decided again on a fresh read.
	if cached && (paperChanged(err) || errs.Is(err, errs.KindInvalid)) {
		r, _, err = s.submit(ctx, caller, examID, in, true)
	}
	return r, err
}

// submit scores in against the exam's paper (read afresh when fresh is
// set) and stores it; cached says whether the paper came from the cache.
func (s *Service) submit(ctx context.Context, caller *tenancy.Caller, examID string, in NewResult, fresh bool) (r Result, cached bool, err error) {
	sub, err := s.submission(ctx, examID, in.UserID, fresh)
	if err != nil {
		return Result{}, false, err
	}
	given, err := indexAnswers(sub.questions, in.Answers)
	if err != nil {
		return Result{}, sub.cached, err
	}
	r = Result{ID: ids.New(ids.Result), ExamID: examID, UserID: in.UserID, Region: sub.region, Source: cmp.Or(in.Source, SourceAPI),
		AttemptID: in.AttemptID, AssignmentID: in.AssignmentID}
	if r.Answers, err = s.score(ctx, sub.questions, given); err != nil {
		return Result{}, sub.cached, err
	}
	for _, a := range r.Answers {
		r.Score += a.Score
		r.MaxScore += a.MaxScore
	}
	r.Score, r.MaxScore = roundTotal(r.Score), roundTotal(r.MaxScore)
	r.Status, r.Reason = resultStatus(r.Answers)
	if err := s.insertResult(ctx, caller, &r, sub, given); err != nil {
		return Result{}, sub.cached, err
	}
	return r, sub.cached, nil
}

// roundTotal rounds a sum of scores to 9 decimal places, as the SQL that
// finishes grading does (round(sum(score)::numeric, 9)): a total is what a
// person adds up, 0.1 + 0.2 = 0.3, not the float 0.30000000000000004
// (decision 0140).
func roundTotal(sum float64) float64 {
	return math.Round(sum*1e9) / 1e9
}

// gradedEntry records that grading finished a result: result.graded, or
// result.grading_failed when an answer could not be graded.
func gradedEntry(r Result) audit.Entry {
	action := "result.graded"
	if r.Status == StatusFailed {
		action = "result.grading_failed"
	}
	return audit.Entry{Action: action, Actor: gradingActor, Target: audit.Target{Type: "result", ID: r.ID},
		After: map[string]any{"examId": r.ExamID, "userId": r.UserID, "score": r.Score, "maxScore": r.MaxScore}}
}

// auditGraded appends gradedEntry(r) and, when an endpoint receives it,
// its webhook event, sent with the COMMIT of ctx's transaction.
func (s *Service) auditGraded(ctx context.Context, r Result, webhooks event.Subscriptions) error {
	b := &pgx.Batch{}
	if err := audit.Queue(ctx, b, gradedEntry(r)); err != nil {
		return err
	}
	s.queueGraded(b, r.ID)
	if t := gradedEvent(r); webhooks.Has(t) {
		if err := s.Events.Queue(b, t, r); err != nil {
			return err
		}
	}
	// Nothing reads them back: they go with the COMMIT (decision 0141).
	return s.db.SendAtCommit(ctx, b)
}

// queueGraded adds OnGraded's writes for result id to b.
func (s *Service) queueGraded(b *pgx.Batch, id string) {
	if s.OnGraded != nil {
		s.OnGraded(b, id)
	}
}

// gradedEvent is the webhook event of a finished result.
func gradedEvent(r Result) event.Type {
	if r.Status == StatusFailed {
		return event.ResultFailed
	}
	return event.ResultGraded
}

// givenAnswer is a submitted answer with its value encoded once: the
// encoding is measured, stored, and decoded into the plain JSON values the
// rules see.
type givenAnswer struct {
	*NewAnswer
	json []byte // nil when the value is nil
}

// indexAnswers validates the submitted answers and maps them by question.
func indexAnswers(questions []Question, answers []NewAnswer) (map[string]givenAnswer, error) {
	inExam := map[string]Question{}
	for _, q := range questions {
		inExam[q.ID] = q
	}
	given := map[string]givenAnswer{}
	for i := range answers {
		a := givenAnswer{NewAnswer: &answers[i]}
		field := fmt.Sprintf("answers.%d", i)
		switch {
		case !ids.Valid(ids.Question, a.QuestionID):
			return nil, errs.Invalid(field+".questionId", "must be a question id (qst_...)")
		case inExam[a.QuestionID].ID == "":
			return nil, errs.Invalid(field+".questionId", "names no question of this exam")
		case given[a.QuestionID].NewAnswer != nil:
			return nil, errs.Invalid(field+".questionId", "answers the same question twice")
		}
		if a.Value != nil {
			b, err := json.Marshal(a.Value)
			if err != nil {
				return nil, errs.Invalid(field+".value", "must be a JSON value")
			}
			if len(b) > maxValueBytes {
				return nil, errs.Invalid(field+".value", "must be at most %d bytes of JSON", maxValueBytes)
			}
			a.json = b
		}
		// Grading fetches every file an answer lists: a file listed twice,
		// or more files than the question takes, would be fetched and sent
		// to the AI provider for nothing.
		if limit := filesAllowed(inExam[a.QuestionID]); len(a.Files) > limit {
			return nil, errs.Invalid(field+".files", "may list at most %d files", limit)
		}
		for j, f := range a.Files {
			u, err := url.Parse(f)
			switch {
			case err != nil || len(f) > maxURLLen || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
				return nil, errs.Invalid(fmt.Sprintf("%s.files.%d", field, j), "must be an absolute http(s) URL")
			case slices.Contains(a.Files[:j], f):
				return nil, errs.Invalid(fmt.Sprintf("%s.files.%d", field, j), "lists a file already listed")
			}
		}
		given[a.QuestionID] = a
	}
	return given, nil
}

// filesAllowed is how many files an answer to q may list: its config's
// maxFiles (file_upload), else maxFiles.
func filesAllowed(q Question) int {
	if n, ok := q.Config["maxFiles"].(float64); ok && n >= 1 && n < maxFiles {
		return int(n)
	}
	return maxFiles
}

// score scores each question's answer (given[q.ID].NewAnswer nil when
// unanswered), evaluating the scoring rules in one batch. An answer's value
// is the plain JSON form of what was submitted, as it reads back from the
// database. When no evaluation slot frees in time, nothing is scored and
// the error is errScoringBusy.
func (s *Service) score(ctx context.Context, questions []Question, given map[string]givenAnswer) ([]Answer, error) {
	answers := make([]Answer, len(questions))
	var tasks []expr.Task
	var ruled []int // the answer each task scores
	for i, q := range questions {
		a := Answer{QuestionID: q.ID, QuestionRevision: q.Revision, MaxScore: q.Points, Status: AnswerGraded, Files: []string{}}
		if in := given[q.ID]; in.NewAnswer != nil {
			if in.json != nil {
				_ = json.Unmarshal(in.json, &a.Value) // it was just encoded
			}
			if in.Files != nil {
				a.Files = in.Files
			}
		}
		switch {
		case q.Def == nil:
			a.Status, a.Feedback = AnswerFailed, Unresolved.Message
		case a.Value == nil && len(a.Files) == 0:
			a.Feedback = "not answered"
		case q.Def.GradingEnabled:
			a.Status = AnswerPending
		default:
			e, err := s.rules.Compile(q.Def.Condition)
			if err != nil {
				a.Feedback = "the answer could not be scored: " + err.Error()
				break
			}
			tasks = append(tasks, expr.Task{Expr: e, Data: ruleData(a.Value, a.Files, q.Config)})
			ruled = append(ruled, i)
		}
		answers[i] = a
	}
	org, _ := store.OrgID(ctx)
	for k, o := range expr.EvalAll(ctx, org, tasks) {
		a := &answers[ruled[k]]
		frac, err := fractionOf(o)
		switch {
		case errors.Is(err, expr.ErrBusy):
			return nil, errScoringBusy
		case errors.Is(err, expr.ErrTimeout):
			a.Status, a.Feedback = AnswerFailed, "the scoring rule took too long to evaluate"
		case err != nil:
			a.Feedback = "the answer could not be scored: " + err.Error()
		default:
			a.Score = roundScore(frac * a.MaxScore)
		}
	}
	return answers, nil
}

// errScoringBusy refuses a submission or correction whose scoring rules
// found no free evaluation slot in time (expr.SlotWait): a 503 the client
// retries, rather than answers stored as failed because the server was
// busy (decision 0169).
var errScoringBusy = errs.Unavailable("SCORING_BUSY", "the server is busy scoring other submissions; retry in a moment")

// ruleData is what a question type's expressions read: the answer and the
// question's config, as plain JSON values.
func ruleData(value any, files []string, config map[string]any) map[string]any {
	fileList := make([]any, len(files))
	for i, f := range files {
		fileList[i] = f
	}
	return map[string]any{"answer": map[string]any{"value": value, "files": fileList}, "config": config}
}

// fractionOf is the share of the points a condition's outcome awards: true
// is full credit, false or no value none, a number from 0 to 1 that
// fraction.
func fractionOf(o expr.Outcome) (float64, error) {
	if errors.Is(o.Err, expr.ErrUndefined) {
		return 0, nil
	}
	if o.Err != nil {
		return 0, o.Err
	}
	return Fraction(o.Value)
}

// Fraction is the share of the points a condition's value awards: true is
// full credit, false none, a number from 0 to 1 that fraction.
func Fraction(v any) (float64, error) {
	switch v := v.(type) {
	case bool:
		if v {
			return 1, nil
		}
		return 0, nil
	case float64:
		if v >= 0 && v <= 1 {
			return v, nil
		}
	case int:
		if v == 0 || v == 1 {
			return float64(v), nil
		}
	}
	return 0, errors.New("the scoring rule must yield true, false or a number from 0 to 1")
}

func roundScore(v float64) float64 { return math.Round(v*1e6) / 1e6 }

func resultStatus(answers []Answer) (status, reason string) {
	status = StatusGraded
	for _, a := range answers {
		switch a.Status {
		case AnswerPending:
			return StatusGrading, ""
		case AnswerFailed:
			status, reason = StatusFailed, "answer to "+a.QuestionID+" could not be graded: "+a.Feedback
		}
	}
	return status, reason
}

// insertResult writes r, its answers, the audit entries of its submission
// and, when an answer awaits AI grading, the grading request (decision 0045:
// the dispatcher starts it after commit, on the region recorded with the
// result), in one batch. It sets the times the database gave them.
func (s *Service) insertResult(ctx context.Context, caller *tenancy.Caller, r *Result, sub submission, given map[string]givenAnswer) error {
	questions, n := sub.questions, len(r.Answers)
	qids, positions, values, files, statuses := make([]string, n), make([]int32, n), make([]*string, n), make([]string, n), make([]string, n)
	scores, maxes, feedback := make([]float64, n), make([]float64, n), make([]string, n)
	// Each answer records the revision it answered (decision 0090).
	revisions := make([]int32, n)
	for i, a := range r.Answers {
		qids[i], positions[i], statuses[i] = a.QuestionID, int32(questions[i].Position), a.Status
		revisions[i] = int32(questions[i].Revision)
		scores[i], maxes[i], feedback[i] = a.Score, a.MaxScore, a.Feedback
		if v := given[a.QuestionID].json; v != nil {
			values[i] = new(string(v))
		}
		b, _ := json.Marshal(a.Files)
		files[i] = string(b)
	}
	b := &pgx.Batch{}
	s.queueCheckCurrent(b, r.ExamID, r.UserID, sub)
	var graded, at *time.Time
	if r.Status != StatusGrading {
		// Graded at once: its times are known before the batch, so the
		// result.graded event sent with it carries them (decision 0105).
		t := time.Now().UTC().Truncate(time.Microsecond)
		at = &t
		r.SubmittedAt, r.GradedAt = t, t
		for i := range r.Answers {
			if r.Answers[i].Status != AnswerPending {
				r.Answers[i].GradedAt = t
			}
		}
	}
	b.Queue(`
		INSERT INTO results (id, org_id, exam_id, user_id, status, score, max_score, reason, region, submitted_at, graded_at, source,
		                     attempt_id, assignment_id)
		VALUES ($1, app_org_id(), $2, $3, $4, $5, $6, $7, $8, coalesce($10::timestamptz, now()),
		        CASE WHEN $4 = 'grading' THEN NULL ELSE coalesce($10::timestamptz, now()) END, $9,
		        nullif($11, ''), nullif($12, ''))
		RETURNING submitted_at, graded_at`,
		r.ID, r.ExamID, r.UserID, r.Status, r.Score, r.MaxScore, r.Reason, r.Region, r.Source, at, r.AttemptID, r.AssignmentID).
		QueryRow(func(row pgx.Row) error { return row.Scan(&r.SubmittedAt, &graded) })
	// Each answer's graded_at equals the result's submitted_at (now() is
	// the transaction's start).
	b.Queue(`
		INSERT INTO result_answers (result_id, question_id, org_id, exam_id, position, value, files, status,
		                            score, max_score, feedback, graded_at, question_revision)
		SELECT $1, a.qid, app_org_id(), $2, a.pos, a.val::jsonb, a.files::jsonb, a.status, a.score, a.max, a.fb,
		       CASE WHEN a.status = 'pending' THEN NULL ELSE coalesce($12::timestamptz, now()) END, a.rev
		  FROM unnest($3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::float8[], $9::float8[], $10::text[], $11::int[])
		       AS a(qid, pos, val, files, status, score, max, fb, rev)`,
		r.ID, r.ExamID, qids, positions, values, files, statuses, scores, maxes, feedback, revisions, at)
	entries := []audit.Entry{{Action: "result.submitted", Actor: tenancy.ActorOf(caller), Target: audit.Target{Type: "result", ID: r.ID},
		After: map[string]any{"examId": r.ExamID, "userId": r.UserID, "status": r.Status}}}
	if r.Status == StatusGrading {
		if err := outbox.Queue(b, outbox.KindGrading, r.ID, r.Region); err != nil {
			return err
		}
	} else {
		entries = append(entries, gradedEntry(*r))
		s.queueGraded(b, r.ID)
		if t := gradedEvent(*r); sub.webhooks.Has(t) {
			if err := s.Events.Queue(b, t, *r); err != nil {
				return err
			}
		}
	}
	for _, e := range entries {
		if err := audit.Queue(ctx, b, e); err != nil {
			return err
		}
	}
	if err := s.db.SendBatch(ctx, b); err != nil {
		// The exam or the student was deleted after the read above.
		switch store.ForeignKey(err) {
		case "results_exam_id_fkey":
			return errs.NotFound("exam")
		case "results_user_id_fkey":
			return errUnknownUser
		}
		return fmt.Errorf("submit result: %w", err)
	}
	if graded != nil {
		r.GradedAt = *graded
	}
	for i := range r.Answers {
		if r.Answers[i].Status != AnswerPending {
			r.Answers[i].GradedAt = r.SubmittedAt
		}
	}
	return nil
}

const resultColumns = `id, exam_id, user_id, status, score, max_score, reason, region, source,
	coalesce(attempt_id, ''), coalesce(assignment_id, ''), submitted_at, graded_at`

func scanResult(row pgx.Row) (Result, error) {
	var r Result
	var graded *time.Time
	err := row.Scan(&r.ID, &r.ExamID, &r.UserID, &r.Status, &r.Score, &r.MaxScore, &r.Reason, &r.Region, &r.Source,
		&r.AttemptID, &r.AssignmentID, &r.SubmittedAt, &graded)
	if graded != nil {
		r.GradedAt = *graded
	}
	return r, err
}

// Results lists an exam's results, oldest first. Students see only their
// own.
func (s *Service) Results(ctx context.Context, examID string, f ResultFilter, p paging.Page) ([]Result, string, error) {
	caller, err := tenancy.Authorize(ctx, ReadResults)
	if err != nil {
		return nil, "", err
	}
	if f.UserID != "" {
		if err := checkID("userId", ids.User, f.UserID, "a user"); err != nil {
			return nil, "", err
		}
	}
	switch f.Status {
	case "", StatusGrading, StatusGraded, StatusFailed:
	default:
		return nil, "", errs.Invalid("status", "must be grading, graded or failed")
	}
	own := ""
	if caller.Role == tenancy.RoleStudent {
		own = caller.UserID
	}
	q := s.db.Q(ctx)
	if _, err := s.loadExam(ctx, q, "examId", examID, store.NoLock); err != nil {
		return nil, "", err
	}
	out, next, err := store.ListPage(ctx, q, p, scanResult, func(r Result) string { return r.ID }, `
		SELECT `+resultColumns+` FROM results
		 WHERE org_id = app_org_id() AND exam_id = $1
		   AND ($2 = '' OR user_id = $2) AND ($3 = '' OR (user_id = $3 AND assignment_results_shown(assignment_id)))
		   AND ($4 = '' OR status = $4)
		   AND id > $5
		 ORDER BY id LIMIT $6`, examID, f.UserID, own, f.Status, p.After, p.Limit())
	if err != nil {
		return nil, "", fmt.Errorf("list results: %w", err)
	}
	kept, err := s.attachAnswers(ctx, q, out, PageAnswerBytes)
	if err != nil {
		return nil, "", err
	}
	if kept < len(out) {
		out, next = out[:kept], paging.TokenAfter(out[kept-1].ID)
	}
	return out, next, nil
}

// PageAnswerBytes bounds the answers of one page of results, as stored: a
// page ends before the result that would pass it (a first result is kept
// whole), so a page of 200 results of large answers is not held at once.
// Its next token carries on from there (decision 0168).
const PageAnswerBytes = 8 << 20

// Result returns one result; examID, when set, must be its exam.
func (s *Service) Result(ctx context.Context, examID, id string) (Result, error) {
	caller, err := tenancy.Authorize(ctx, ReadResults)
	if err != nil {
		return Result{}, err
	}
	if examID != "" {
		if err := checkID("examId", ids.Exam, examID, "an exam"); err != nil {
			return Result{}, err
		}
	}
	r, err := s.loadResult(ctx, examID, id)
	if err == nil && caller.Role == tenancy.RoleStudent {
		err = s.checkShown(ctx, caller, r)
	}
	if err != nil {
		return Result{}, err
	}
	return r, nil
}

// checkShown answers a student's read of result r: their own, and for a
// submitted attempt only once its assignment's showResults allows.
func (s *Service) checkShown(ctx context.Context, caller *tenancy.Caller, r Result) error {
	if r.UserID != caller.UserID {
		return errs.NotFound("result")
	}
	if r.AssignmentID == "" {
		return nil
	}
	var shown bool
	if err := s.db.Q(ctx).QueryRow(ctx, `SELECT assignment_results_shown($1)`, r.AssignmentID).Scan(&shown); err != nil {
		return fmt.Errorf("load result: %w", err)
	}
	if !shown {
		return errs.NotFound("result")
	}
	return nil
}

// loadResult reads a result and its answers in one round trip, inside
// ctx's transaction when there is one.
func (s *Service) loadResult(ctx context.Context, examID, id string) (Result, error) {
	return s.readResult(ctx, examID, id, "")
}

// readResult is loadResult with a row-locking clause for the result
// ("FOR UPDATE" in a transaction that is about to change it, "").
func (s *Service) readResult(ctx context.Context, examID, id, locking string) (Result, error) {
	if err := checkID("id", ids.Result, id, "a result"); err != nil {
		return Result{}, err
	}
	rs := []Result{{ID: id}}
	b := &pgx.Batch{}
	b.Queue(`SELECT `+resultColumns+` FROM results
		 WHERE org_id = app_org_id() AND id = $1 AND ($2 = '' OR exam_id = $2) `+locking, id, examID).
		QueryRow(func(row pgx.Row) (err error) {
			rs[0], err = scanResult(row)
			return err
		})
	queueAnswers(b, rs)
	err := s.db.SendBatch(ctx, b)
	if isNoRows(err) {
		return Result{}, errs.NotFound("result")
	}
	if err != nil {
		return Result{}, fmt.Errorf("load result: %w", err)
	}
	return rs[0], nil
}

// answersSQL reads the answers of the results with ids $1, each result's
// in question order.
const answersSQL = `
	SELECT result_id, question_id, value, files, status, score, max_score, feedback, grading, needs_review, graded_at, question_revision
	  FROM result_answers WHERE org_id = app_org_id() AND result_id = ANY($1)
	 ORDER BY result_id, position`

// attachAnswers loads the answers of rs into them, up to the result whose
// answers pass maxBytes, and returns how many results it filled: at least
// one, and rs[kept:] have no answers loaded.
func (s *Service) attachAnswers(ctx context.Context, q store.Querier, rs []Result, maxBytes int) (kept int, err error) {
	if len(rs) == 0 {
		return 0, nil
	}
	rows, err := q.Query(ctx, answersSQL, resultIDs(rs))
	if err != nil {
		return 0, fmt.Errorf("load answers: %w", err)
	}
	return scanAnswersUpTo(rows, rs, maxBytes)
}

// queueAnswers is attachAnswers as a statement of b: the answers of rs
// (by the ids they have now) are attached to them when b is sent.
func queueAnswers(b *pgx.Batch, rs []Result) {
	b.Queue(answersSQL, resultIDs(rs)).Query(func(rows pgx.Rows) error { return scanAnswers(rows, rs) })
}

func resultIDs(rs []Result) []string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	return ids
}

// scanAnswers appends each row of answersSQL to its result in rs.
func scanAnswers(rows pgx.Rows, rs []Result) error {
	_, err := scanAnswersUpTo(rows, rs, math.MaxInt)
	return err
}

// scanAnswersUpTo is scanAnswers that stops at the first result, after
// the first, whose answers take the bytes read past maxBytes, and returns
// how many of rs it filled: the rows come in rs's order (by id), so those
// are rs's first.
func scanAnswersUpTo(rows pgx.Rows, rs []Result, maxBytes int) (int, error) {
	defer rows.Close()
	idx := make(map[string]int, len(rs))
	for i, r := range rs {
		idx[r.ID] = i
	}
	read := 0
	for rows.Next() {
		for _, v := range rows.RawValues() {
			read += len(v)
		}
		var resultID string
		var a Answer
		var graded *time.Time
		if err := rows.Scan(&resultID, &a.QuestionID, &a.Value, &a.Files, &a.Status, &a.Score, &a.MaxScore, &a.Feedback, &a.Grading, &a.NeedsReview, &graded, &a.QuestionRevision); err != nil {
			return 0, fmt.Errorf("load answers: %w", err)
		}
		if graded != nil {
			a.GradedAt = *graded
		}
		i := idx[resultID]
		if read > maxBytes && i > 0 {
			rs[i].Answers = nil // the page ends before this result
			return i, nil
		}
		rs[i].Answers = append(rs[i].Answers, a)
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("load answers: %w", err)
	}
	return len(rs), nil
}

// ResultStudent returns the user who submitted result id. Like ExamExists
// it serves other services and checks no permission itself.
func (s *Service) ResultStudent(ctx context.Context, id string) (string, error) {
	if err := checkID("resultId", ids.Result, id, "a result"); err != nil {
		return "", err
	}
	var userID string
	err := s.db.Q(ctx).QueryRow(ctx, `SELECT user_id FROM results WHERE org_id = app_org_id() AND id = $1`, id).Scan(&userID)
	if isNoRows(err) {
		return "", errs.NotFound("result")
	}
	return userID, err
}
