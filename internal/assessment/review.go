package assessment

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// CorrectResults is the permission to correct a submitted answer: staff
// with results:write.
var CorrectResults = tenancy.Permission{Scope: tenancy.ScopeResultsWrite, Roles: staff}

// FlagForReview marks answers of a result as needing a person's review. It
// is for the scanning service, inside the transaction that submits the
// result, and checks no permission of its own.
func (s *Service) FlagForReview(ctx context.Context, resultID string, questionIDs []string) error {
	if len(questionIDs) == 0 {
		return nil
	}
	_, err := s.db.Q(ctx).Exec(ctx, `UPDATE result_answers SET needs_review = true
		WHERE org_id = app_org_id() AND result_id = $1 AND question_id = ANY($2)`, resultID, questionIDs)
	if err != nil {
		return fmt.Errorf("flag for review: %w", err)
	}
	return nil
}

// CorrectAnswer replaces the value of one answer of a finished result (a
// teacher reading what a scan could not), clears its review flag and scores
// it again: by the question's rule at once, or, for a question graded by
// AI, by grading the result again (it is "grading" until then, on the
// region recorded with it). The result's score and status follow.
func (s *Service) CorrectAnswer(ctx context.Context, resultID, questionID string, value any) (Result, error) {
	caller, err := tenancy.Authorize(ctx, CorrectResults)
	if err != nil {
		return Result{}, err
	}
	if b, _ := json.Marshal(value); len(b) > maxValueBytes {
		return Result{}, errs.Invalid("value", "must be at most %d bytes of JSON", maxValueBytes)
	}
	var r Result
	// Corrections of one result take turns (the result's row lock, before
	// any answer's), and writers of one summary shard take its lock before
	// its rows (decision 0149). A deadlock those orders do not foresee
	// aborts one transaction, which runs again.
	err = store.RetryDeadlock(func() error {
		return s.db.Tx(ctx, func(ctx context.Context) error {
			q := s.db.Q(ctx)
			before, err := s.readResult(ctx, "", resultID, "FOR UPDATE")
			if err != nil {
				return err
			}
			var old *Answer
			for i := range before.Answers {
				if before.Answers[i].QuestionID == questionID {
					old = &before.Answers[i]
				}
			}
			if old == nil {
				if err := checkID("questionId", ids.Question, questionID, "a question"); err != nil {
					return err
				}
				return errs.NotFound("answer")
			}
			if before.Status == StatusGrading {
				return errs.FailedPrecondition("RESULT_GRADING", "the result is still being graded; correct it once it is graded")
			}
			// The correction is scored against the revision the student
			// answered, like the rest of the result (decision 0090).
			qu, err := s.loadAnsweredRevision(ctx, q, before.ExamID, questionID, old.QuestionRevision)
			if isNoRows(err) {
				return errs.NotFound("question")
			}
			if err != nil {
				return err
			}
			given := givenAnswer{NewAnswer: &NewAnswer{QuestionID: questionID, Value: value, Files: old.Files}}
			if value != nil {
				given.json, _ = json.Marshal(value) // it encoded above
			}
			scored, err := s.score(ctx, []Question{qu}, map[string]givenAnswer{questionID: given})
			if err != nil {
				return err
			}
			a := scored[0]
			var v *string
			if given.json != nil {
				v = new(string(given.json))
			}
			if _, err := q.Exec(ctx, `
			UPDATE result_answers SET value = $3::jsonb, status = $4, score = $5, feedback = $6, grading = NULL,
			       needs_review = false, graded_at = CASE WHEN $4 = 'pending' THEN NULL ELSE now() END
			 WHERE org_id = app_org_id() AND result_id = $1 AND question_id = $2`,
				resultID, questionID, v, a.Status, a.Score, a.Feedback); err != nil {
				return fmt.Errorf("correct answer: %w", err)
			}
			if _, err := q.Exec(ctx, `
			UPDATE results r SET score = a.score,
			       status = CASE WHEN a.pending > 0 THEN 'grading' WHEN a.failed > 0 THEN 'failed' ELSE 'graded' END,
			       reason = CASE WHEN a.pending = 0 AND a.failed > 0 THEN r.reason ELSE '' END,
			       graded_at = CASE WHEN a.pending > 0 THEN NULL ELSE r.graded_at END
			  FROM (SELECT round(coalesce(sum(score), 0)::numeric, 9)::float8 AS score, count(*) FILTER (WHERE status = 'pending') AS pending,
			               count(*) FILTER (WHERE status = 'failed') AS failed
			          FROM result_answers WHERE org_id = app_org_id() AND result_id = $1) a
			 WHERE r.org_id = app_org_id() AND r.id = $1`, resultID); err != nil {
				return fmt.Errorf("correct answer: %w", err)
			}
			if a.Status == AnswerPending {
				// Graded again after commit, like a submission (decision 0045).
				if err := outbox.Again(ctx, q, outbox.KindGrading, resultID, before.Region); err != nil {
					return err
				}
			} else if s.OnGraded != nil {
				// Scored at once: the corrected grading is finished.
				b := &pgx.Batch{}
				s.OnGraded(b, resultID)
				if err := s.db.SendAtCommit(ctx, b); err != nil {
					return err
				}
			}
			if r, err = s.loadResult(ctx, "", resultID); err != nil {
				return err
			}
			return s.audit(ctx, caller, "result.answer_corrected", "result", resultID,
				map[string]any{"questionId": questionID, "value": old.Value, "score": old.Score, "resultScore": before.Score},
				map[string]any{"questionId": questionID, "value": a.Value, "score": a.Score, "resultScore": r.Score})
		})
	})
	return r, err
}
