// Package regeneration proposes new versions of questions with AI
// (decision 0091): a request is stored with its outbox row (the
// regeneration workflow starts from there, on the organization's AI
// region), the workflow records a proposal valid for the question's type,
// and accepting it makes the proposal the question's next revision. It
// knows nothing of the workflow engine.
package regeneration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/webhooks/event"
	"github.com/assessd/assessd/tenancy"
)

// Statuses of a regeneration.
const (
	StatusRunning = "running"
	StatusReady   = "ready"
	StatusFailed  = "failed"
)

// Regeneration is a request for a new version of a question and its
// outcome.
type Regeneration struct {
	ID         string
	Status     string
	ExamID     string
	QuestionID string
	// BaseRevision is the question revision the proposal is made from.
	BaseRevision int
	Region       string
	Instructions string
	// Proposal is set once ready.
	Proposal *assessment.Proposal
	Error    string
	// AcceptedRevision is the question revision the accepted proposal
	// became; 0 until accepted.
	AcceptedRevision int
	AcceptedAt       time.Time
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// Service creates, reads and accepts regenerations, and serves the
// regeneration workflow's activities (activities/regeneration).
type Service struct {
	db      *store.DB
	content *assessment.Service
}

// NewService returns a Service.
func NewService(db *store.DB, content *assessment.Service) *Service {
	return &Service{db: db, content: content}
}

// Create asks for a new version of a question, with optional instructions
// ("harder", "change the numbers"). The request and its outbox row are
// stored in one transaction: the dispatcher starts the workflow after
// commit, on the region the organization has now (decision 0045). Any
// question of the organization qualifies, whatever its type's state
// (deprecated, another organization's public type): only a type that no
// longer resolves cannot be regenerated.
func (s *Service) Create(ctx context.Context, examID, questionID, instructions string) (Regeneration, error) {
	caller, err := tenancy.Authorize(ctx, assessment.WriteExams)
	if err != nil {
		return Regeneration{}, err
	}
	instructions = strings.TrimSpace(instructions)
	if utf8.RuneCountInString(instructions) > ai.MaxInstructionsLength {
		return Regeneration{}, errs.Invalid("instructions", "must be at most %d characters", ai.MaxInstructionsLength)
	}
	if strings.ContainsFunc(instructions, func(r rune) bool { return r < ' ' && r != '\n' && r != '\t' }) {
		return Regeneration{}, errs.Invalid("instructions", "must not contain control characters")
	}
	var g Regeneration
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		qu, _, err := s.content.QuestionInExam(ctx, examID, questionID)
		if err != nil {
			return err
		}
		if qu.Def == nil {
			return assessment.Unresolved
		}
		g = Regeneration{ID: ids.New(ids.Regeneration), Status: StatusRunning, ExamID: examID, QuestionID: questionID,
			BaseRevision: qu.Revision, Instructions: instructions}
		q := s.db.Q(ctx)
		if err := q.QueryRow(ctx, `
			INSERT INTO question_regenerations (id, org_id, exam_id, question_id, base_revision, requested_by, region, status, instructions)
			VALUES ($1, app_org_id(), $2, $3, $4, $5, `+tenancy.AIRegionSQL+`, 'running', $6)
			RETURNING region, created_at, updated_at`,
			g.ID, examID, questionID, g.BaseRevision, caller.UserID, instructions).Scan(&g.Region, &g.CreatedAt, &g.UpdatedAt); err != nil {
			return err
		}
		if err := audit.Record(ctx, s.db, audit.Entry{Action: "question_regeneration.requested", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "question_regeneration", ID: g.ID},
			After:  map[string]any{"questionId": questionID, "revision": g.BaseRevision, "region": g.Region}}); err != nil {
			return err
		}
		return outbox.Add(ctx, q, outbox.KindRegeneration, g.ID, g.Region)
	})
	if store.ForeignKey(err) == "question_regenerations_question_id_fkey" {
		return Regeneration{}, errs.NotFound("question") // deleted after the read above
	}
	if err != nil {
		return Regeneration{}, fmt.Errorf("create regeneration: %w", err)
	}
	return g, nil
}

const columns = `id, status, exam_id, question_id, base_revision, region, instructions, proposal, error,
	coalesce(accepted_revision, 0), accepted_at, created_at, updated_at`

func scan(row pgx.Row) (Regeneration, error) {
	var g Regeneration
	var proposal *struct {
		Prompt string         `json:"prompt"`
		Config map[string]any `json:"config"`
		Points float64        `json:"points"`
	}
	var accepted *time.Time
	err := row.Scan(&g.ID, &g.Status, &g.ExamID, &g.QuestionID, &g.BaseRevision, &g.Region, &g.Instructions, &proposal,
		&g.Error, &g.AcceptedRevision, &accepted, &g.CreatedAt, &g.UpdatedAt)
	if proposal != nil {
		g.Proposal = &assessment.Proposal{Prompt: proposal.Prompt, Config: proposal.Config, Points: proposal.Points}
	}
	if accepted != nil {
		g.AcceptedAt = *accepted
	}
	return g, err
}

// Get returns one regeneration of the caller's organization.
func (s *Service) Get(ctx context.Context, id string) (Regeneration, error) {
	if _, err := tenancy.Authorize(ctx, assessment.ReadQuestions); err != nil {
		return Regeneration{}, err
	}
	return s.load(ctx, s.db.Q(ctx), id, false)
}

func (s *Service) load(ctx context.Context, q store.Querier, id string, forUpdate bool) (Regeneration, error) {
	if !ids.Valid(ids.Regeneration, id) {
		return Regeneration{}, errs.Invalid("id", "must be a question regeneration id (rgn_...)")
	}
	sql := `SELECT ` + columns + ` FROM question_regenerations WHERE org_id = app_org_id() AND id = $1`
	if forUpdate {
		sql += ` FOR UPDATE`
	}
	g, err := scan(q.QueryRow(ctx, sql, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Regeneration{}, errs.NotFound("question regeneration")
	}
	if err != nil {
		return Regeneration{}, fmt.Errorf("load regeneration: %w", err)
	}
	return g, nil
}

// Accept makes a ready proposal the question's next revision. It is a
// conflict (409) when the regeneration is not ready, was accepted already,
// or the question changed since the proposal was made: the teacher then
// regenerates from the current version.
func (s *Service) Accept(ctx context.Context, id string) (Regeneration, assessment.Question, error) {
	caller, err := tenancy.Authorize(ctx, assessment.WriteExams)
	if err != nil {
		return Regeneration{}, assessment.Question{}, err
	}
	var g Regeneration
	var qu assessment.Question
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		var err error
		if g, err = s.load(ctx, q, id, true); err != nil {
			return err
		}
		switch {
		case g.AcceptedRevision > 0:
			return errs.Conflict("REGENERATION_ALREADY_ACCEPTED", "the proposal was accepted already, as revision %d", g.AcceptedRevision)
		case g.Status != StatusReady:
			return errs.Conflict("REGENERATION_NOT_READY", "the regeneration is %s; only a ready proposal can be accepted", g.Status)
		}
		if qu, err = s.content.ReviseQuestion(ctx, g.ExamID, g.QuestionID, g.BaseRevision, *g.Proposal, g.ID); err != nil {
			return err
		}
		if err := q.QueryRow(ctx, `UPDATE question_regenerations SET accepted_revision = $2, accepted_at = now(), updated_at = now()
			WHERE org_id = app_org_id() AND id = $1 RETURNING accepted_at, updated_at`, id, qu.Revision).Scan(&g.AcceptedAt, &g.UpdatedAt); err != nil {
			return err
		}
		g.AcceptedRevision = qu.Revision
		err = audit.Record(ctx, s.db, audit.Entry{Action: "question_regeneration.accepted", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "question_regeneration", ID: id},
			After:  map[string]any{"questionId": g.QuestionID, "revision": qu.Revision}})
		return err
	})
	if err != nil {
		return Regeneration{}, assessment.Question{}, fmt.Errorf("accept regeneration: %w", err)
	}
	return g, qu, nil
}

// ErrCannotRegenerate marks a regeneration that can never succeed (the
// question was deleted or its type no longer resolves): the workflow fails
// it without retrying.
var ErrCannotRegenerate = errors.New("the question cannot be regenerated")

// The methods below serve the regeneration workflow's activities. They run
// for the organization in ctx (store.WithOrg) and check no caller
// permission: the workflow acts for the platform.

// Request returns what regeneration id asks the AI provider for: the
// question as it was at the base revision's time (it is read now; a later
// edit makes the proposal unacceptable anyway) with its type's schema.
func (s *Service) Request(ctx context.Context, id string) (ai.RegenerateRequest, error) {
	g, err := s.ofWorkflow(ctx, id)
	if err != nil {
		return ai.RegenerateRequest{}, err
	}
	qu, language, err := s.content.QuestionInExam(ctx, g.ExamID, g.QuestionID)
	if errs.Is(err, errs.KindNotFound) {
		return ai.RegenerateRequest{}, fmt.Errorf("%w: the question was deleted", ErrCannotRegenerate)
	}
	if err != nil {
		return ai.RegenerateRequest{}, err
	}
	if qu.Def == nil {
		return ai.RegenerateRequest{}, fmt.Errorf("%w: %s", ErrCannotRegenerate, assessment.Unresolved.Message)
	}
	return ai.RegenerateRequest{QuestionType: qu.Def.Key, TypeName: qu.Def.Name, TypeDescription: qu.Def.Description,
		ConfigSchema: qu.Def.ConfigSchema, Prompt: qu.Prompt, Config: qu.Config, Points: qu.Points,
		Instructions: g.Instructions, Language: language}, nil
}

// ofWorkflow loads regeneration id for its workflow. A regeneration goes
// with its question (and its exam), so one that is gone was deleted with
// it: no retry can bring it back.
func (s *Service) ofWorkflow(ctx context.Context, id string) (Regeneration, error) {
	g, err := s.load(ctx, s.db.Q(ctx), id, false)
	if errs.Is(err, errs.KindNotFound) {
		return g, fmt.Errorf("%w: the question was deleted", ErrCannotRegenerate)
	}
	return g, err
}

// Outcome is what finishing a regeneration did: its new status (ready or
// failed) and when it was requested; an empty Status when it was finished
// already (a retried call changes nothing).
type Outcome struct {
	Status      string
	RequestedAt time.Time
}

// UnchangedReason is why a regeneration whose proposal is the question as
// it is failed: whatever the provider, a no-op is never offered for
// acceptance (decision 0190).
const UnchangedReason = "the AI proposal is the same as the current question"

// Propose validates a provider's proposal against the question's type and
// records it: the regeneration becomes ready. A proposal that is not valid
// fails the regeneration with the reason (the validation message names
// the field), and so does one equal to the question (UnchangedReason):
// asking the same provider again would most likely answer the same.
func (s *Service) Propose(ctx context.Context, id string, p ai.RegeneratedQuestion) (Outcome, error) {
	g, err := s.ofWorkflow(ctx, id)
	if err != nil {
		return Outcome{}, err
	}
	qu, _, err := s.content.QuestionInExam(ctx, g.ExamID, g.QuestionID)
	if err != nil {
		return s.finish(ctx, id, nil, "the question can no longer be regenerated")
	}
	proposal := assessment.Proposal{Prompt: strings.TrimSpace(p.Prompt), Config: p.Config, Points: p.Points}
	if err := assessment.CheckProposal(qu, proposal); err != nil {
		return s.finish(ctx, id, nil, "the AI proposal was not valid for the question type: "+err.Error())
	}
	if proposal.Unchanged(qu) {
		return s.finish(ctx, id, nil, UnchangedReason)
	}
	return s.finish(ctx, id, &proposal, "")
}

// Fail finishes a running regeneration as failed with reason.
func (s *Service) Fail(ctx context.Context, id, reason string) (Outcome, error) {
	return s.finish(ctx, id, nil, reason)
}

// Unfinished returns those of ids still running, the outbox route's
// unfinished subjects.
func (s *Service) Unfinished(ctx context.Context, ids []string) ([]string, error) {
	return store.Strings(ctx, s.db.Q(ctx), `
		SELECT id FROM question_regenerations WHERE org_id = app_org_id() AND id = ANY($1) AND status = 'running'`, ids)
}

// Abandon fails a regeneration whose workflow cannot run (the outbox
// route's abandon).
func (s *Service) Abandon(ctx context.Context, id, reason string) error {
	_, err := s.finish(ctx, id, nil, reason)
	return err
}

// regenerationActor is the platform's regeneration, which finishes a
// request long after the requester's call returned.
var regenerationActor = audit.Actor{Kind: audit.ActorSystem, ID: "regeneration"}

// finish records the outcome of a running regeneration, audited as
// question_regeneration.completed or question_regeneration.failed.
func (s *Service) finish(ctx context.Context, id string, p *assessment.Proposal, failure string) (Outcome, error) {
	status, action := StatusReady, "question_regeneration.completed"
	var proposal any
	if p != nil {
		proposal = store.JSON{V: map[string]any{"prompt": p.Prompt, "config": p.Config, "points": p.Points}}
	} else {
		status, action = StatusFailed, "question_regeneration.failed"
	}
	var out Outcome
	err := s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		var questionID string
		err := q.QueryRow(ctx, `UPDATE question_regenerations SET status = $2, proposal = $3::jsonb, error = $4, updated_at = now()
			WHERE org_id = app_org_id() AND id = $1 AND status = 'running' RETURNING question_id, created_at`, id, status, proposal, failure).
			Scan(&questionID, &out.RequestedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		out.Status = status
		if err != nil {
			return err
		}
		after := map[string]any{"questionId": questionID}
		if failure != "" {
			after["error"] = failure
		}
		if err = audit.Record(ctx, s.db, audit.Entry{Action: action, Actor: regenerationActor,
			Target: audit.Target{Type: "question_regeneration", ID: id}, After: after}); err != nil {
			return err
		}
		if status != StatusReady {
			return nil // no event: API.md names question_regeneration.completed only
		}
		g, err := s.load(ctx, q, id, false)
		if err != nil {
			return err
		}
		return s.content.Events.Record(ctx, s.db, event.QuestionRegenerationCompleted, g)
	})
	if err != nil {
		return Outcome{}, fmt.Errorf("finish regeneration: %w", err)
	}
	return out, nil
}
