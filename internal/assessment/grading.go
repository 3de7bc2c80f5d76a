package assessment

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/assessment/expr"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/webhooks/event"
)

// The methods in this file are the write-back side of AI grading, for the
// grading workflow's activities. They run for the organization in ctx
// (store.WithOrg) and check no caller permission: the workflow acts for
// the platform. Every write is conditional on the current state, so a
// retried activity changes nothing twice.

// PendingAnswers returns the question ids of a result's answers that await
// AI grading, in exam order.
func (s *Service) PendingAnswers(ctx context.Context, resultID string) ([]string, error) {
	rows, err := s.db.Q(ctx).Query(ctx, `
		SELECT question_id FROM result_answers
		 WHERE org_id = app_org_id() AND result_id = $1 AND status = 'pending' ORDER BY position`, resultID)
	if err != nil {
		return nil, fmt.Errorf("pending answers: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// GradingInput is what AI grading needs of one pending answer.
type GradingInput struct {
	QuestionType string
	Prompt       string
	Config       map[string]any
	Answer       any
	Points       float64
	// FileURLs are what the type's grading.fileInputs resolved to.
	FileURLs []string
}

// ErrCannotGrade marks answers that can never be graded (question deleted,
// type no longer shared, fileInputs failing): the workflow fails them
// without retrying.
var ErrCannotGrade = errors.New("the answer cannot be graded")

// GradingInput loads a pending answer with its question and resolved type,
// and evaluates the type's grading.fileInputs with the answer and the
// question configuration in scope.
func (s *Service) GradingInput(ctx context.Context, resultID, questionID string) (GradingInput, error) {
	var (
		in    GradingInput
		files []string
		qu    Question
	)
	// One round trip: the answer, and the question as the student answered
	// it, even if it was revised since (decision 0090).
	b := &pgx.Batch{}
	b.Queue(`SELECT value, files, max_score FROM result_answers
		WHERE org_id = app_org_id() AND result_id = $1 AND question_id = $2`, resultID, questionID).
		QueryRow(func(row pgx.Row) error {
			err := row.Scan(&in.Answer, &files, &in.Points)
			if isNoRows(err) {
				return fmt.Errorf("%w: the answer no longer exists", ErrCannotGrade)
			}
			return err
		})
	b.Queue(`SELECT `+answeredRevisionColumns+` FROM result_answers a
		  JOIN questions q ON q.org_id = a.org_id AND q.exam_id = a.exam_id AND q.id = a.question_id
		  JOIN question_revisions v ON v.org_id = q.org_id AND v.question_id = q.id AND v.revision = a.question_revision
		 WHERE a.org_id = app_org_id() AND a.result_id = $1 AND a.question_id = $2`, resultID, questionID).
		QueryRow(func(row pgx.Row) (err error) {
			qu, err = scanQuestion(row)
			if isNoRows(err) {
				return fmt.Errorf("%w: the question was deleted", ErrCannotGrade)
			}
			return err
		})
	if err := s.db.SendBatch(ctx, b); err != nil {
		if errors.Is(err, ErrCannotGrade) {
			return in, err
		}
		return in, fmt.Errorf("load answer: %w", err)
	}
	qs := []Question{qu}
	if err := s.resolve(ctx, s.db.Q(ctx), qs); err != nil {
		return in, err
	}
	qu = qs[0]
	def := qu.Def
	if def == nil {
		return in, fmt.Errorf("%w: %s", ErrCannotGrade, Unresolved.Message)
	}
	in.QuestionType, in.Prompt, in.Config = def.Key, qu.Prompt, qu.Config
	if def.FileInputs == "" {
		return in, nil
	}
	e, err := s.rules.Compile(def.FileInputs)
	if err != nil {
		return in, fmt.Errorf("%w: grading.fileInputs %s", ErrCannotGrade, err)
	}
	org, _ := store.OrgID(ctx)
	out, err := e.Eval(ctx, org, ruleData(in.Answer, files, qu.Config))
	switch {
	case errors.Is(err, expr.ErrUndefined):
		return in, nil
	case errors.Is(err, expr.ErrBusy):
		return in, err // transient: the activity retries
	case err != nil:
		return in, fmt.Errorf("%w: grading.fileInputs could not be evaluated: %s", ErrCannotGrade, err)
	}
	switch v := out.(type) {
	case string:
		in.FileURLs = []string{v}
	case []any:
		for _, item := range v {
			if u, ok := item.(string); ok {
				in.FileURLs = append(in.FileURLs, u)
			}
		}
	}
	return in, nil
}

// RecordGrade stores the AI grade of a pending answer: score (clamped to
// the answer's points), feedback and the grading details (rationale,
// region, files attached and skipped). An answer that is no longer pending
// is left as it is, which makes a retry harmless.
func (s *Service) RecordGrade(ctx context.Context, resultID, questionID string, score float64, feedback string, details map[string]any) error {
	if math.IsNaN(score) {
		score = 0
	}
	_, err := s.db.Q(ctx).Exec(ctx, `
		UPDATE result_answers SET score = least(greatest($3::float8, 0), max_score), feedback = $4, grading = $5::jsonb, status = 'graded', graded_at = now()
		 WHERE org_id = app_org_id() AND result_id = $1 AND question_id = $2 AND status = 'pending'`,
		resultID, questionID, score, feedback, store.JSON{V: details})
	if err != nil {
		return fmt.Errorf("record grade: %w", err)
	}
	return nil
}

// FinishResult closes a result that is grading: answers in failures (by
// question id, with a reason) are marked failed, the score becomes the sum
// of the answers' scores, and the status graded, or failed when any answer
// failed. A result already finished is returned unchanged.
func (s *Service) FinishResult(ctx context.Context, resultID string, failures map[string]string) (Result, error) {
	var r Result
	err := s.db.Tx(ctx, func(ctx context.Context) error {
		// One round trip: the failures, the result's total, its answers
		// and the webhook subscriptions.
		b := &pgx.Batch{}
		for questionID, reason := range failures {
			b.Queue(`
				UPDATE result_answers SET status = 'failed', feedback = $3, graded_at = now()
				 WHERE org_id = app_org_id() AND result_id = $1 AND question_id = $2 AND status = 'pending'`,
				resultID, questionID, reason)
		}
		var (
			finished = []Result{{ID: resultID}}
			webhooks event.Subscriptions
		)
		b.Queue(`
			UPDATE results r SET score = a.total, graded_at = now(),
			       status = CASE WHEN a.failed > 0 THEN 'failed' ELSE 'graded' END,
			       reason = CASE WHEN a.failed > 0 THEN a.failed || ' answer(s) could not be graded' ELSE '' END
			  FROM (SELECT round(coalesce(sum(score), 0)::numeric, 9)::float8 AS total, count(*) FILTER (WHERE status <> 'graded') AS failed
			          FROM result_answers WHERE org_id = app_org_id() AND result_id = $1) a
			 WHERE r.org_id = app_org_id() AND r.id = $1 AND r.status = 'grading'
			RETURNING `+resultColumns, resultID).
			QueryRow(func(row pgx.Row) (err error) {
				finished[0], err = scanResult(row)
				return err
			})
		queueAnswers(b, finished)
		s.Events.QueueSubscriptions(b, &webhooks)
		err := s.db.SendBatch(ctx, b)
		if isNoRows(err) {
			// Finished before (or never there): returned as it is.
			r, err = s.loadResult(ctx, "", resultID)
			return err
		}
		if err != nil {
			return fmt.Errorf("finish result: %w", err)
		}
		r = finished[0]
		return s.auditGraded(ctx, r, webhooks)
	})
	return r, err
}

// UnfinishedGrading returns those of resultIDs still grading, the grading
// outbox route's unfinished subjects.
func (s *Service) UnfinishedGrading(ctx context.Context, resultIDs []string) ([]string, error) {
	return store.Strings(ctx, s.db.Q(ctx), `
		SELECT id FROM results WHERE org_id = app_org_id() AND id = ANY($1) AND status = 'grading'`, resultIDs)
}

// FailGrading finishes a result whose grading cannot run at all: every
// answer still pending fails with reason. A finished result is left as it
// is.
func (s *Service) FailGrading(ctx context.Context, resultID, reason string) error {
	pending, err := s.PendingAnswers(ctx, resultID)
	if err != nil {
		return err
	}
	failures := make(map[string]string, len(pending))
	for _, questionID := range pending {
		failures[questionID] = reason
	}
	_, err = s.FinishResult(ctx, resultID, failures)
	return err
}

// answeredRevisionColumns are scanQuestion's columns of a question (q) at
// the revision (v) an answer was given to.
const answeredRevisionColumns = `q.id, q.exam_id, q.position, coalesce(v.builtin_type, v.type_id), v.prompt, v.config, v.points, v.revision, q.created_at, q.updated_at`

// loadAnsweredRevision loads a question as it was at revision, the one a
// student answered, with its type resolved; pgx.ErrNoRows when the
// question was deleted.
func (s *Service) loadAnsweredRevision(ctx context.Context, q store.Querier, examID, questionID string, revision int) (Question, error) {
	qu, err := scanQuestion(q.QueryRow(ctx, `
		SELECT `+answeredRevisionColumns+`
		  FROM questions q JOIN question_revisions v ON v.org_id = q.org_id AND v.question_id = q.id AND v.revision = $3
		 WHERE q.org_id = app_org_id() AND q.exam_id = $1 AND q.id = $2`, examID, questionID, revision))
	if err != nil {
		if isNoRows(err) {
			return qu, err
		}
		return qu, fmt.Errorf("load question: %w", err)
	}
	qs := []Question{qu}
	if err := s.resolve(ctx, q, qs); err != nil {
		return qu, err
	}
	return qs[0], nil
}
