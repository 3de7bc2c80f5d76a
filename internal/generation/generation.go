// Package generation turns exam generation requests into exams: it stores
// the request with its outbox row (the generation workflow starts from
// there, on the organization's AI region), and creates the exam from the
// questions the provider proposed. It knows nothing of the workflow engine.
package generation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/text/language"

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

// Params are what a teacher asks for.
type Params struct {
	Subject         string   `json:"subject"`
	StudentLevel    string   `json:"studentLevel"`
	DurationMinutes int      `json:"durationMinutes"`
	Taxonomy        string   `json:"taxonomy"`
	QuestionTypes   []string `json:"questionTypes"`
	Language        string   `json:"language"`
	Count           int      `json:"count"`
}

// The statuses a generation ends in.
const (
	StatusReady  = "ready"
	StatusFailed = "failed"
)

// Generation is a request and its outcome.
type Generation struct {
	ID        string
	Status    string // running, ready or failed
	ExamID    string
	Error     string
	Region    string
	Params    Params
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Service creates and reads generations, and serves the generation
// workflow's activities (activities/generation).
type Service struct {
	db      *store.DB
	content *assessment.Service
}

// NewService returns a Service.
func NewService(db *store.DB, content *assessment.Service) *Service {
	return &Service{db: db, content: content}
}

// generatable are the question types generation can produce.
var generatable = []string{assessment.TypeMultipleChoice, assessment.TypeTrueFalse, assessment.TypeShortText, assessment.TypeNumeric, assessment.TypeEssay}

func (p *Params) validate() error {
	p.Subject, p.StudentLevel, p.Taxonomy = strings.TrimSpace(p.Subject), strings.TrimSpace(p.StudentLevel), strings.TrimSpace(p.Taxonomy)
	switch {
	case p.Subject == "" || len(p.Subject) > 200:
		return errs.Invalid("subject", "is required (at most 200 characters)")
	case len(p.StudentLevel) > 100:
		return errs.Invalid("studentLevel", "must be at most 100 characters")
	case len(p.Taxonomy) > 100:
		return errs.Invalid("taxonomy", "must be at most 100 characters")
	case p.DurationMinutes < 0 || p.DurationMinutes > 600:
		return errs.Invalid("durationMinutes", "must be between 1 and 600")
	case p.Count < 0 || p.Count > ai.MaxQuestionCount:
		return errs.Invalid("count", "must be between 1 and %d", ai.MaxQuestionCount)
	}
	if p.Count == 0 {
		p.Count = ai.DefaultQuestionCount
	}
	if p.Language == "" {
		p.Language = "en"
	}
	if _, err := language.Parse(p.Language); err != nil {
		return errs.Invalid("language", "must be a BCP 47 language tag such as en or fr-CA")
	}
	if len(p.QuestionTypes) == 0 {
		p.QuestionTypes = generatable
	}
	for _, t := range p.QuestionTypes {
		if !slices.Contains(generatable, t) {
			return errs.Invalid("questionTypes", "%q cannot be generated; use %s", t, strings.Join(generatable, ", "))
		}
	}
	return nil
}

// Create stores a request, with its outbox row: the dispatcher starts the
// generation workflow after commit, on the region the organization has now
// (decision 0045).
func (s *Service) Create(ctx context.Context, p Params) (Generation, error) {
	caller, err := tenancy.Authorize(ctx, assessment.WriteExams)
	if err != nil {
		return Generation{}, err
	}
	if err := p.validate(); err != nil {
		return Generation{}, err
	}
	params, _ := json.Marshal(p)
	g := Generation{ID: ids.New(ids.Generation), Status: "running", Params: p}
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		if err := q.QueryRow(ctx, `INSERT INTO exam_generations (id, org_id, requested_by, region, status, params)
			VALUES ($1, app_org_id(), $2, `+tenancy.AIRegionSQL+`, 'running', $3::jsonb)
			RETURNING region, created_at, updated_at`,
			g.ID, caller.UserID, string(params)).Scan(&g.Region, &g.CreatedAt, &g.UpdatedAt); err != nil {
			return err
		}
		if err := audit.Record(ctx, s.db, audit.Entry{Action: "exam_generation.requested", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "exam_generation", ID: g.ID}, After: map[string]any{"region": g.Region, "subject": p.Subject}}); err != nil {
			return err
		}
		return outbox.Add(ctx, q, outbox.KindGeneration, g.ID, g.Region)
	})
	if err != nil {
		return Generation{}, fmt.Errorf("create generation: %w", err)
	}
	return g, nil
}

// Get returns one generation of the caller's organization.
func (s *Service) Get(ctx context.Context, id string) (Generation, error) {
	if _, err := tenancy.Authorize(ctx, assessment.ReadQuestions); err != nil {
		return Generation{}, err
	}
	if !ids.Valid(ids.Generation, id) {
		return Generation{}, errs.Invalid("id", "must be a generation id (gen_...)")
	}
	return s.load(ctx, s.db.Q(ctx), id)
}

// load is Get without the permission check.
func (s *Service) load(ctx context.Context, q store.Querier, id string) (Generation, error) {
	g := Generation{ID: id}
	var params []byte
	var examID *string
	err := q.QueryRow(ctx, `SELECT status, exam_id, error, region, params, created_at, updated_at
		FROM exam_generations WHERE org_id = app_org_id() AND id = $1`, id).
		Scan(&g.Status, &examID, &g.Error, &g.Region, &params, &g.CreatedAt, &g.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Generation{}, errs.NotFound("exam generation")
	}
	if err != nil {
		return Generation{}, fmt.Errorf("load generation: %w", err)
	}
	if examID != nil {
		g.ExamID = *examID
	}
	return g, json.Unmarshal(params, &g.Params)
}

// ErrNoValidQuestion is CreateExam's error when none of the generated
// questions is valid for its type: generating again will not help.
var ErrNoValidQuestion = errors.New("none of the generated questions was valid for its type")

// The methods below serve the generation workflow's activities. They run
// for the organization in ctx (store.WithOrg) and check no caller
// permission: the workflow acts for the platform.

// Request returns what generation id asks the AI provider for.
func (s *Service) Request(ctx context.Context, id string) (ai.GenerateRequest, error) {
	var params []byte
	if err := s.db.Q(ctx).QueryRow(ctx, `SELECT params FROM exam_generations WHERE org_id = app_org_id() AND id = $1`, id).Scan(&params); err != nil {
		return ai.GenerateRequest{}, fmt.Errorf("load generation: %w", err)
	}
	var p Params
	if err := json.Unmarshal(params, &p); err != nil {
		return ai.GenerateRequest{}, err
	}
	return ai.GenerateRequest{Subject: p.Subject, StudentLevel: p.StudentLevel, DurationMinutes: p.DurationMinutes,
		Taxonomy: p.Taxonomy, QuestionTypes: p.QuestionTypes, Language: p.Language, Count: p.Count}, nil
}

// CreateExam creates generation id's exam: in one transaction it creates
// the exam and the questions valid for their types (ErrNoValidQuestion if
// none is), and records the exam on the generation, so a retry finds it
// done and returns the same exam.
func (s *Service) CreateExam(ctx context.Context, id string, qs []ai.GeneratedQuestion) (string, error) {
	orgID, ok := store.OrgID(ctx)
	if !ok {
		return "", store.ErrNoTenant
	}
	var examID string
	err := s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		var existing *string
		var requestedBy string
		var params []byte
		if err := q.QueryRow(ctx, `SELECT exam_id, requested_by, params FROM exam_generations WHERE org_id = app_org_id() AND id = $1 FOR UPDATE`, id).
			Scan(&existing, &requestedBy, &params); err != nil {
			return err
		}
		if existing != nil {
			examID = *existing
			return nil
		}
		var p Params
		if err := json.Unmarshal(params, &p); err != nil {
			return err
		}
		// The system acts for the teacher who asked.
		actx := tenancy.WithCaller(ctx, &tenancy.Caller{Kind: tenancy.KindSystem, OrgID: orgID, UserID: requestedBy,
			Role: tenancy.RoleOwner, Scopes: tenancy.AllScopes})
		name := p.Subject
		if p.StudentLevel != "" {
			name += " (" + p.StudentLevel + ")"
		}
		exam, err := s.content.CreateExam(actx, assessment.NewExam{Name: name, Language: p.Language, DurationMinutes: p.DurationMinutes,
			Description: "Generated by AI from: " + p.Subject})
		if err != nil {
			return err
		}
		created := 0
		for _, gq := range qs {
			_, err := s.content.CreateQuestion(actx, exam.ID, assessment.NewQuestion{Type: gq.Type, Prompt: gq.Prompt, Config: toSchema(gq.Type, gq.Config), Points: gq.Points})
			if errs.Is(err, errs.KindInvalid) || errs.Is(err, errs.KindConflict) {
				slog.WarnContext(ctx, "generated question dropped", "type", gq.Type, "err", err)
				continue
			}
			if err != nil {
				return err
			}
			created++
		}
		if created == 0 {
			return ErrNoValidQuestion
		}
		examID = exam.ID
		_, err = q.Exec(ctx, `UPDATE exam_generations SET exam_id = $2, updated_at = now() WHERE org_id = app_org_id() AND id = $1`, id, exam.ID)
		return err
	})
	return examID, err
}

// generationActor is the platform's exam generation, which finishes a
// request long after the requester's call returned.
var generationActor = audit.Actor{Kind: audit.ActorSystem, ID: "generation"}

// Finish records the outcome of a running generation: ready, or failed
// with failure when that is not empty. The first call is audited as
// exam_generation.completed or exam_generation.failed and returns the
// status it set; a finished generation is left as it is, so a retried
// call changes nothing and returns "".
func (s *Service) Finish(ctx context.Context, id, failure string) (status string, err error) {
	status, action := StatusReady, "exam_generation.completed"
	if failure != "" {
		status, action = StatusFailed, "exam_generation.failed"
	}
	finished := false
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		var examID *string
		err := q.QueryRow(ctx, `UPDATE exam_generations SET status = $2, error = $3, updated_at = now()
			WHERE org_id = app_org_id() AND id = $1 AND status = 'running' RETURNING exam_id`, id, status, failure).Scan(&examID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		finished = true
		after := map[string]any{}
		if failure != "" {
			after["error"] = failure
		}
		if examID != nil {
			after["examId"] = *examID
		}
		if err = audit.Record(ctx, s.db, audit.Entry{Action: action, Actor: generationActor,
			Target: audit.Target{Type: "exam_generation", ID: id}, After: after}); err != nil {
			return err
		}
		g, err := s.load(ctx, q, id)
		if err != nil {
			return err
		}
		return s.content.Events.Record(ctx, s.db, event.Type(action), g)
	})
	if err != nil {
		return "", fmt.Errorf("finish generation: %w", err)
	}
	if !finished {
		return "", nil
	}
	return status, nil
}

// Unfinished returns those of ids still running, the outbox route's
// unfinished subjects.
func (s *Service) Unfinished(ctx context.Context, ids []string) ([]string, error) {
	return store.Strings(ctx, s.db.Q(ctx), `
		SELECT id FROM exam_generations WHERE org_id = app_org_id() AND id = ANY($1) AND status = 'running'`, ids)
}

// Abandon fails a generation whose workflow cannot run (the outbox
// route's abandon).
func (s *Service) Abandon(ctx context.Context, id, reason string) error {
	_, err := s.Finish(ctx, id, reason)
	return err
}

// toSchema maps the provider's question configuration onto the built-in
// types' configuration schemas.
func toSchema(typ string, c map[string]any) map[string]any {
	switch typ {
	case assessment.TypeMultipleChoice:
		options, _ := c["options"].([]any)
		correct := map[int]bool{}
		for _, i := range asList(c["correct"]) {
			if f, ok := i.(float64); ok {
				correct[int(f)] = true
			}
		}
		out := make([]any, 0, len(options))
		for i, o := range options {
			text, _ := o.(string)
			out = append(out, map[string]any{"id": string(rune('a' + i)), "text": text, "correct": correct[i]})
		}
		return map[string]any{"options": out}
	case assessment.TypeShortText:
		return map[string]any{"acceptedAnswers": c["accepted"]}
	case assessment.TypeNumeric:
		out := map[string]any{"correct": c["answer"]}
		if t, ok := c["tolerance"]; ok {
			out["tolerance"] = t
		}
		return out
	case assessment.TypeEssay:
		rubric, _ := c["rubric"].(string)
		if kw := asList(c["keywords"]); len(kw) > 0 {
			words := make([]string, 0, len(kw))
			for _, k := range kw {
				if s, ok := k.(string); ok {
					words = append(words, s)
				}
			}
			rubric += " Key points: " + strings.Join(words, ", ") + "."
		}
		out := map[string]any{"rubric": strings.TrimSpace(rubric)}
		if m, ok := c["minWords"]; ok {
			out["minWords"] = m
		}
		return out
	}
	return c
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
