// Package generation turns exam generation requests into exams: it stores
// the request, starts the generation workflow on the organization's AI
// region, and creates the exam from the questions the provider proposed.
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
	"go.temporal.io/sdk/temporal"
	"golang.org/x/text/language"

	"github.com/assessd/assessd/activities"
	"github.com/assessd/assessd/ai"
	"github.com/assessd/assessd/assessment"
	"github.com/assessd/assessd/errs"
	"github.com/assessd/assessd/ids"
	"github.com/assessd/assessd/store"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/workflows"
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

// Starter starts generation workflows.
type Starter interface {
	StartGeneration(ctx context.Context, in workflows.GenerateExamInput) error
}

// Service creates and reads generations, and implements
// activities.GenerationStore for the workflow.
type Service struct {
	db      *store.DB
	content *assessment.Service
	starter Starter
}

var _ activities.GenerationStore = (*Service)(nil)

// NewService returns a Service; starter may be nil when no workflow engine
// is configured (requests then fail with 503).
func NewService(db *store.DB, content *assessment.Service, starter Starter) *Service {
	return &Service{db: db, content: content, starter: starter}
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

// Create stores a request and starts its workflow on the region the
// organization has now.
func (s *Service) Create(ctx context.Context, p Params) (Generation, error) {
	caller, err := tenancy.Authorize(ctx, assessment.WriteExams)
	if err != nil {
		return Generation{}, err
	}
	if err := p.validate(); err != nil {
		return Generation{}, err
	}
	if s.starter == nil {
		return Generation{}, errs.Unavailable("GENERATION_UNAVAILABLE", "exam generation is not available on this server")
	}
	params, _ := json.Marshal(p)
	g := Generation{ID: ids.New(ids.Generation), Status: "running", Params: p}
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		if err := q.QueryRow(ctx, `SELECT ai_region FROM orgs WHERE id = app_org_id()`).Scan(&g.Region); err != nil {
			return err
		}
		return q.QueryRow(ctx, `INSERT INTO exam_generations (id, org_id, requested_by, region, status, params)
			VALUES ($1, app_org_id(), $2, $3, 'running', $4::jsonb) RETURNING created_at, updated_at`,
			g.ID, caller.UserID, g.Region, string(params)).Scan(&g.CreatedAt, &g.UpdatedAt)
	})
	if err != nil {
		return Generation{}, fmt.Errorf("create generation: %w", err)
	}
	if err := s.starter.StartGeneration(ctx, workflows.GenerateExamInput{OrgID: caller.OrgID, GenerationID: g.ID, Region: g.Region}); err != nil {
		slog.ErrorContext(ctx, "start generation", "err", err)
		_ = s.FinishGeneration(ctx, workflows.FinishGenerationInput{OrgID: caller.OrgID, GenerationID: g.ID, Error: "the generation could not be started"})
		return Generation{}, errs.Unavailable("GENERATION_UNAVAILABLE", "exam generation is temporarily unavailable; retry in a moment").WithCause(err)
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
	g := Generation{ID: id}
	var params []byte
	var examID *string
	err := s.db.Q(ctx).QueryRow(ctx, `SELECT status, exam_id, error, region, params, created_at, updated_at
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

// GenerationRequest implements activities.GenerationStore.
func (s *Service) GenerationRequest(ctx context.Context, orgID, id string) (ai.GenerateRequest, error) {
	ctx = store.WithOrg(ctx, orgID)
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

// CreateGeneratedExam implements activities.GenerationStore: in one
// transaction it creates the exam, the questions valid for their types, and
// records the exam on the generation, so a retry finds it done.
func (s *Service) CreateGeneratedExam(ctx context.Context, orgID, id string, qs []workflows.GeneratedQuestion) (string, error) {
	ctx = store.WithOrg(ctx, orgID)
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
			return temporal.NewNonRetryableApplicationError("none of the generated questions was valid for its type", workflows.ErrTypeInvalidRequest, nil)
		}
		examID = exam.ID
		_, err = q.Exec(ctx, `UPDATE exam_generations SET exam_id = $2, updated_at = now() WHERE org_id = app_org_id() AND id = $1`, id, exam.ID)
		return err
	})
	return examID, err
}

// FinishGeneration implements activities.GenerationStore.
func (s *Service) FinishGeneration(ctx context.Context, in workflows.FinishGenerationInput) error {
	ctx = store.WithOrg(ctx, in.OrgID)
	status := "ready"
	if in.Error != "" {
		status = "failed"
	}
	_, err := s.db.Q(ctx).Exec(ctx, `UPDATE exam_generations SET status = $2, error = $3, updated_at = now()
		WHERE org_id = app_org_id() AND id = $1 AND status = 'running'`, in.GenerationID, status, in.Error)
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
