package assessment

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// Revision sources: how a question's revision came to be.
const (
	RevisionCreated     = "created"
	RevisionEdited      = "edited"
	RevisionRegenerated = "regenerated"
)

// Revision is one version of a question's content (decision 0090).
type Revision struct {
	QuestionID string
	Revision   int
	Type       string
	Prompt     string
	Config     map[string]any
	Points     float64
	// Source is created, edited or regenerated; RegenerationID names the
	// accepted regeneration of a regenerated revision.
	Source         string
	RegenerationID string
	// CreatedBy is the user who made the revision ("" for the platform).
	CreatedBy string
	CreatedAt time.Time
}

// Proposal is new content for a question of unchanged type: what a
// regeneration proposes.
type Proposal struct {
	Prompt string
	Config map[string]any
	Points float64
}

// applyTo returns qu with p's content.
func (p Proposal) applyTo(qu Question) Question {
	qu.Prompt, qu.Config, qu.Points = p.Prompt, p.Config, p.Points
	return qu
}

// Unchanged reports whether p is qu's own content: the same prompt, points
// and config, compared as JSON as they are stored (7 and 7.0 alike).
func (p Proposal) Unchanged(qu Question) bool { return sameContent(qu, p.applyTo(qu)) }

// appendRevision records the question's current row as its current
// revision.
func appendRevision(ctx context.Context, q store.Querier, questionID, source, regenerationID, createdBy string) error {
	if _, err := q.Exec(ctx, `
		INSERT INTO question_revisions (question_id, revision, org_id, exam_id, builtin_type, type_id, prompt, config, points,
		                                source, regeneration_id, created_by)
		SELECT id, revision, org_id, exam_id, builtin_type, type_id, prompt, config, points, $2, nullif($3, ''), $4
		  FROM questions WHERE org_id = app_org_id() AND id = $1`,
		questionID, source, regenerationID, createdBy); err != nil {
		return fmt.Errorf("record question revision: %w", err)
	}
	return nil
}

// sameContent reports whether two versions of a question have the same
// type, prompt, config and points.
func sameContent(a, b Question) bool {
	ca, _ := json.Marshal(a.Config)
	cb, _ := json.Marshal(b.Config)
	return a.Type == b.Type && a.Prompt == b.Prompt && a.Points == b.Points && string(ca) == string(cb)
}

// saveRevision writes out over before (the question, locked by the
// caller) and audits question.updated. Changed content becomes the next
// revision, recorded with source; an edit that changes nothing keeps the
// revision, while an accepted regeneration always makes one (the teacher
// chose that proposal).
func (s *Service) saveRevision(ctx context.Context, caller *tenancy.Caller, before, out Question, source, regenerationID string) (Question, error) {
	q := s.db.Q(ctx)
	changed := source == RevisionRegenerated || !sameContent(before, out)
	builtin, typeID := typeColumnsOf(TypeDef{BuiltIn: isBuiltin(out.Type), ID: out.Type, Key: out.Type})
	if _, err := q.Exec(ctx, `
		UPDATE questions SET prompt = $3, points = $4, config = $5::jsonb, builtin_type = $6, type_id = $7,
		       revision = revision + CASE WHEN $8 THEN 1 ELSE 0 END, updated_at = now()
		 WHERE org_id = app_org_id() AND exam_id = $1 AND id = $2`,
		before.ExamID, before.ID, out.Prompt, out.Points, store.JSON{V: out.Config}, builtin, typeID, changed); err != nil {
		return Question{}, fmt.Errorf("update question: %w", err)
	}
	if changed {
		if err := appendRevision(ctx, q, before.ID, source, regenerationID, caller.UserID); err != nil {
			return Question{}, err
		}
	}
	saved, err := s.loadQuestion(ctx, q, before.ExamID, before.ID, store.NoLock)
	if err != nil {
		return Question{}, err
	}
	return saved, s.audit(ctx, caller, "question.updated", "question", before.ID, questionSnapshot(before), questionSnapshot(saved))
}

// ReviseQuestion makes p the next revision of a question, keeping its type
// (even a deprecated one, or another organization's public type: existing
// questions keep working, spec 2.4). It is refused with a conflict when the
// question is no longer at revision base, so a proposal made from one
// version never silently replaces a later edit. It runs in the caller's
// transaction when there is one.
func (s *Service) ReviseQuestion(ctx context.Context, examID, id string, base int, p Proposal, regenerationID string) (Question, error) {
	caller, err := tenancy.Authorize(ctx, WriteExams)
	if err != nil {
		return Question{}, err
	}
	var out Question
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		if err := lockPaper(ctx, q, examID); err != nil {
			return err
		}
		before, err := s.loadQuestion(ctx, q, examID, id, store.ForNoKeyUpdate)
		if err != nil {
			return err
		}
		if before.Revision != base {
			return errs.Conflict("QUESTION_CHANGED", "the question changed since the proposal was made (revision %d, now %d); regenerate again", base, before.Revision)
		}
		if err := CheckProposal(before, p); err != nil {
			return err
		}
		out, err = s.saveRevision(ctx, caller, before, p.applyTo(before), RevisionRegenerated, regenerationID)
		return err
	})
	return out, err
}

// CheckProposal validates p as new content of question qu: the prompt and
// points within the usual bounds, the config valid against the question's
// type schema.
func CheckProposal(qu Question, p Proposal) error {
	if _, err := text("prompt", p.Prompt, true, 10000); err != nil {
		return err
	}
	if err := validPoints(p.Points); err != nil {
		return err
	}
	if qu.Def == nil {
		return Unresolved
	}
	if p.Config == nil {
		return errs.Invalid("config", "is required")
	}
	return checkConfig(*qu.Def, p.Config)
}

// QuestionInExam returns a question with its resolved type and its exam's
// language. Like ExamExists it serves other services (the regeneration
// workflow acts for the platform) and checks no caller permission.
func (s *Service) QuestionInExam(ctx context.Context, examID, id string) (Question, string, error) {
	q := s.db.Q(ctx)
	exam, err := s.loadExam(ctx, q, "examId", examID, store.NoLock)
	if err != nil {
		return Question{}, "", err
	}
	qu, err := s.loadQuestion(ctx, q, examID, id, store.NoLock)
	return qu, exam.Language, err
}

const revisionColumns = `question_id, revision, coalesce(builtin_type, type_id), prompt, config, points, source,
	coalesce(regeneration_id, ''), created_by, created_at`

func scanRevision(row pgx.Row) (Revision, error) {
	var r Revision
	err := row.Scan(&r.QuestionID, &r.Revision, &r.Type, &r.Prompt, &r.Config, &r.Points, &r.Source,
		&r.RegenerationID, &r.CreatedBy, &r.CreatedAt)
	return r, err
}

// QuestionRevisions lists a question's revisions, newest first. A page
// token names the last revision number of the previous page.
func (s *Service) QuestionRevisions(ctx context.Context, examID, id string, p paging.Page) ([]Revision, string, error) {
	if _, err := tenancy.Authorize(ctx, ReadQuestions); err != nil {
		return nil, "", err
	}
	upTo := int64(math.MaxInt32)
	if p.After != "" {
		n, err := strconv.ParseInt(p.After, 10, 32)
		if err != nil || n < 1 {
			return nil, "", errs.Invalid("pageToken", "is not a token returned by this list")
		}
		upTo = n - 1
	}
	q := s.db.Q(ctx)
	if _, err := s.loadQuestion(ctx, q, examID, id, store.NoLock); err != nil {
		return nil, "", err
	}
	out, next, err := store.ListPage(ctx, q, p, scanRevision, func(r Revision) string { return strconv.Itoa(r.Revision) }, `
		SELECT `+revisionColumns+` FROM question_revisions
		 WHERE org_id = app_org_id() AND question_id = $1 AND revision <= $2
		 ORDER BY revision DESC LIMIT $3`, id, upTo, p.Limit())
	if err != nil {
		return nil, "", fmt.Errorf("list question revisions: %w", err)
	}
	return out, next, nil
}
