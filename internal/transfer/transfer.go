// Package transfer moves exams in and out of an organization: it loads an
// exam for the exchange formats and creates an imported exam, its custom
// types and questions in one transaction (decision 0095). The formats
// themselves are package exchange's.
package transfer

import (
	"context"
	"io"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/exchange"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// Formats of an export.
const (
	FormatQTI3 = "qti3"
	FormatJSON = "json"
)

// Service exports and imports exams.
type Service struct {
	db      *store.DB
	content *assessment.Service
	limits  exchange.Limits
}

// NewService returns a Service reading imports within exchange's default
// limits.
func NewService(db *store.DB, content *assessment.Service) *Service {
	return &Service{db: db, content: content, limits: exchange.DefaultLimits}
}

// Limits are the bounds an import body is read within.
func (s *Service) Limits() exchange.Limits { return s.limits }

// Export loads exam examID as a native document and records the export;
// the caller writes it (exchange.WriteQTI or WriteNative) after choosing
// the response headers, so nothing is written before the exam is found.
func (s *Service) Export(ctx context.Context, examID, format string) (exchange.Document, error) {
	if format != FormatQTI3 && format != FormatJSON {
		return exchange.Document{}, errs.Invalid("format", "must be %s or %s", FormatQTI3, FormatJSON)
	}
	caller, err := tenancy.Authorize(ctx, assessment.ReadQuestions)
	if err != nil {
		return exchange.Document{}, err
	}
	var doc exchange.Document
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		exam, qs, err := s.content.ExamContent(ctx, examID)
		if err != nil {
			return err
		}
		doc = exchange.NewDocument(exam, qs)
		err = audit.Record(ctx, s.db, audit.Entry{Action: "exam.exported", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "exam", ID: examID},
			After:  map[string]any{"format": format, "questions": len(qs)}})
		return err
	})
	return doc, err
}

// Imported is the outcome of an import.
type Imported struct {
	ID       string
	ExamID   string
	Warnings []exchange.Warning
}

// Import reads a native document or a QTI package from r and creates its
// exam in the caller's organization, all or nothing. Custom types are
// reused or created as exchange.ResolveTypes decides (decision 0072);
// creating one needs question-types:write.
func (s *Service) Import(ctx context.Context, r io.Reader) (Imported, error) {
	caller, err := tenancy.Authorize(ctx, assessment.WriteExams)
	if err != nil {
		return Imported{}, err
	}
	plan, err := exchange.Import(r, s.limits)
	if err != nil {
		return Imported{}, err
	}
	if len(plan.Questions) > assessment.MaxQuestions {
		return Imported{}, errs.Invalid("file", "holds %d questions; an exam holds at most %d", len(plan.Questions), assessment.MaxQuestions)
	}
	actions, err := s.resolveTypes(ctx, plan)
	if err != nil {
		return Imported{}, err
	}
	out := Imported{ID: ids.New(ids.Import), Warnings: plan.Warnings}
	if out.Warnings == nil {
		out.Warnings = []exchange.Warning{}
	}
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		exam, err := s.content.CreateExam(ctx, assessment.NewExam{Name: plan.Exam.Name, Description: plan.Exam.Description,
			Language: plan.Exam.Language, DurationMinutes: plan.Exam.DurationMinutes})
		if err != nil {
			return asImportError("the exam", err)
		}
		out.ExamID = exam.ID
		typeIDs, deprecate, err := s.provideTypes(ctx, plan, actions)
		if err != nil {
			return err
		}
		for _, q := range plan.Questions {
			typ := q.Type
			if id, ok := typeIDs[typ]; ok {
				typ = id
			}
			if _, err := s.content.CreateQuestion(ctx, exam.ID, assessment.NewQuestion{Type: typ, Prompt: q.Prompt,
				Config: q.Config, Points: q.Points}); err != nil {
				return asImportError("item "+q.SourceID, err)
			}
		}
		yes := true
		for _, id := range deprecate {
			if _, err := s.content.UpdateQuestionType(ctx, id, assessment.TypeDefPatch{Deprecated: &yes}); err != nil {
				return err
			}
		}
		err = audit.Record(ctx, s.db, audit.Entry{Action: "exam.imported", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "exam", ID: exam.ID},
			After: map[string]any{"importId": out.ID, "questions": len(plan.Questions), "typesCreated": len(created(actions)),
				"warnings": len(out.Warnings)}})
		return err
	})
	if err != nil {
		return Imported{}, err
	}
	return out, nil
}

// resolveTypes decides how the organization provides the plan's custom
// types and refuses, before anything is written, an import that must
// create types the caller may not create.
func (s *Service) resolveTypes(ctx context.Context, plan exchange.Plan) ([]exchange.TypeAction, error) {
	if len(plan.Types) == 0 {
		return nil, nil
	}
	var available []assessment.TypeDef
	page := paging.Page{Size: paging.MaxSize}
	for {
		ts, next, err := s.content.QuestionTypes(ctx, page)
		if err != nil {
			return nil, err
		}
		available = append(available, ts...)
		if next == "" {
			break
		}
		page.After = next
	}
	actions := exchange.ResolveTypes(plan, available)
	if len(created(actions)) > 0 {
		if _, err := tenancy.Authorize(ctx, assessment.WriteQuestionTypes); err != nil {
			return nil, err
		}
	}
	return actions, nil
}

// created returns the actions that create a type.
func created(actions []exchange.TypeAction) []exchange.TypeAction {
	var out []exchange.TypeAction
	for _, a := range actions {
		if a.Create {
			out = append(out, a)
		}
	}
	return out
}

// provideTypes creates the types actions ask for and returns the id each
// plan type Ref maps to, and the created types to deprecate once their
// questions exist.
func (s *Service) provideTypes(ctx context.Context, plan exchange.Plan, actions []exchange.TypeAction) (map[string]string, []string, error) {
	specs := make(map[string]exchange.TypeSpec, len(plan.Types))
	for _, t := range plan.Types {
		specs[t.Ref] = t // a Ref declared twice maps to its last declaration
	}
	byRef := map[string]string{}
	var deprecate []string
	for _, a := range actions {
		if !a.Create {
			byRef[a.Ref] = a.Use
			continue
		}
		spec := specs[a.Ref]
		t, err := s.content.CreateQuestionType(ctx, assessment.NewTypeDef{Key: a.Key, Name: spec.Name,
			Description: spec.Description, ConfigSchema: spec.ConfigSchema, Condition: spec.Condition,
			GradingEnabled: spec.GradingEnabled, FileInputs: spec.FileInputs})
		if err != nil {
			return nil, nil, asImportError("question type "+spec.Key, err)
		}
		byRef[a.Ref] = t.ID
		if a.DeprecateAfter {
			deprecate = append(deprecate, t.ID)
		}
	}
	return byRef, deprecate, nil
}

// asImportError says which imported item invalid content came from: the
// field a domain check names is the item's, not the request's.
func asImportError(item string, err error) error {
	e, ok := errs.As(err)
	if !ok || e.Kind != errs.KindInvalid {
		return err
	}
	return errs.Invalid("file", "%s: %s", item, e.Message).WithCause(err)
}
