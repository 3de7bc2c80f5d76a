package assessment

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// Question is one item of an exam.
type Question struct {
	ID       string
	ExamID   string
	Position int // 1-based order within the exam
	// Type is what the question names: a built-in key or a type id.
	Type   string
	Prompt string
	Config map[string]any
	Points float64
	// Revision numbers the question's content: 1 at creation, one more
	// for every edit or accepted regeneration (decision 0090).
	Revision  int
	CreatedAt time.Time
	UpdatedAt time.Time
	// Def is the resolved type definition; nil when the type no longer
	// resolves for this organization (its owner made it private).
	Def *TypeDef
}

// Unresolved is the explicit state of a question whose type stopped
// resolving: it is still listed and readable, and says why it cannot be
// rendered or graded.
var Unresolved = errs.FailedPrecondition("QUESTION_TYPE_UNAVAILABLE",
	"the question type is no longer shared by the organization that owns it; the question cannot be rendered or graded")

// NewQuestion is the input of CreateQuestion.
type NewQuestion struct {
	Type   string
	Prompt string
	Config map[string]any
	Points float64
}

// QuestionPatch changes the fields that are set.
type QuestionPatch struct {
	Type   *string
	Prompt *string
	Config map[string]any
	Points *float64
}

// MaxQuestions bounds an exam, so an exam and its statistics stay one page
// of work.
const MaxQuestions = 500

// AllQuestions is the page that holds every question of an exam, for the
// pages that show or reorder an exam whole: the API's largest page
// (paging.MaxSize) holds fewer.
var AllQuestions = paging.Page{Size: MaxQuestions}

const questionColumns = `id, exam_id, position, coalesce(builtin_type, type_id), prompt, config, points, revision, created_at, updated_at`

func scanQuestion(row pgx.Row) (Question, error) {
	var q Question
	err := row.Scan(&q.ID, &q.ExamID, &q.Position, &q.Type, &q.Prompt, &q.Config, &q.Points, &q.Revision, &q.CreatedAt, &q.UpdatedAt)
	return q, err
}

func questionSnapshot(q Question) map[string]any {
	return map[string]any{"examId": q.ExamID, "position": q.Position, "type": q.Type, "prompt": q.Prompt,
		"config": q.Config, "points": q.Points, "revision": q.Revision}
}

func validPoints(p float64) error {
	if math.IsNaN(p) || p <= 0 || p > 1000 {
		return errs.Invalid("points", "must be more than 0 and at most 1000")
	}
	return nil
}

// resolve attaches the type definitions to qs in one query: built-in keys
// from memory, custom ids as this organization sees them.
func (s *Service) resolve(ctx context.Context, q store.Querier, qs []Question) error {
	custom := resolveBuiltins(qs)
	if len(custom) == 0 {
		return nil
	}
	rows, err := q.Query(ctx, `SELECT `+typeColumns+` FROM question_types t WHERE t.id = ANY($1)`, custom)
	if err != nil {
		return fmt.Errorf("resolve question types: %w", err)
	}
	defs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (TypeDef, error) { return scanTypeDef(r) })
	if err != nil {
		return fmt.Errorf("resolve question types: %w", err)
	}
	resolveCustom(qs, defs)
	return nil
}

// resolveBuiltins attaches the built-in definitions to qs and returns the
// custom type ids left to resolve.
func resolveBuiltins(qs []Question) (custom []string) {
	for i := range qs {
		if b, ok := builtins[qs[i].Type]; ok {
			qs[i].Def = &b
		} else {
			custom = append(custom, qs[i].Type)
		}
	}
	return custom
}

// resolveCustom attaches defs to the questions of their types; a question
// whose type is not among them stays unresolved.
func resolveCustom(qs []Question, defs []TypeDef) {
	byID := map[string]*TypeDef{}
	for i := range defs {
		byID[defs[i].ID] = &defs[i]
	}
	for i := range qs {
		if qs[i].Def == nil {
			qs[i].Def = byID[qs[i].Type]
		}
	}
}

// Questions lists an exam's questions in order.
func (s *Service) Questions(ctx context.Context, examID string, p paging.Page) ([]Question, string, error) {
	if _, err := tenancy.Authorize(ctx, ReadQuestions); err != nil {
		return nil, "", err
	}
	return s.listQuestions(ctx, examID, p)
}

// listQuestions lists an exam's questions in order; the caller has been
// authorized (Questions, or SubmitResult scoring a student's answers).
func (s *Service) listQuestions(ctx context.Context, examID string, p paging.Page) ([]Question, string, error) {
	q := s.db.Q(ctx)
	if _, err := s.loadExam(ctx, q, "examId", examID, store.NoLock); err != nil {
		return nil, "", err
	}
	// The page token names the last question of the previous page; pages
	// continue after its position.
	out, next, err := store.ListPage(ctx, q, p, scanQuestion, func(q Question) string { return q.ID }, `
		SELECT `+questionColumns+` FROM questions
		 WHERE org_id = app_org_id() AND exam_id = $1
		   AND position > coalesce((SELECT position FROM questions WHERE org_id = app_org_id() AND id = $2), 0)
		 ORDER BY position LIMIT $3`, examID, p.After, p.Limit())
	if err != nil {
		return nil, "", fmt.Errorf("list questions: %w", err)
	}
	return out, next, s.resolve(ctx, q, out)
}

// Question returns one question of an exam with its resolved type.
func (s *Service) Question(ctx context.Context, examID, id string) (Question, error) {
	if _, err := tenancy.Authorize(ctx, ReadQuestions); err != nil {
		return Question{}, err
	}
	return s.loadQuestion(ctx, s.db.Q(ctx), examID, id, store.NoLock)
}

func (s *Service) loadQuestion(ctx context.Context, q store.Querier, examID, id string, lock store.RowLock) (Question, error) {
	if err := checkID("examId", ids.Exam, examID, "an exam"); err != nil {
		return Question{}, err
	}
	if err := checkID("questionId", ids.Question, id, "a question"); err != nil {
		return Question{}, err
	}
	sql := `SELECT ` + questionColumns + ` FROM questions WHERE org_id = app_org_id() AND exam_id = $1 AND id = $2`
	sql += string(lock)
	qu, err := scanQuestion(q.QueryRow(ctx, sql, examID, id))
	if isNoRows(err) {
		return Question{}, errs.NotFound("question")
	}
	if err != nil {
		return Question{}, fmt.Errorf("load question: %w", err)
	}
	qs := []Question{qu}
	err = s.resolve(ctx, q, qs)
	return qs[0], err
}

// CreateQuestion appends a question to an exam.
func (s *Service) CreateQuestion(ctx context.Context, examID string, in NewQuestion) (Question, error) {
	caller, err := tenancy.Authorize(ctx, WriteExams)
	if err != nil {
		return Question{}, err
	}
	prompt, err := text("prompt", in.Prompt, true, 10000)
	if err != nil {
		return Question{}, err
	}
	if in.Points == 0 {
		in.Points = 1
	}
	if err := validPoints(in.Points); err != nil {
		return Question{}, err
	}
	if in.Config == nil {
		in.Config = map[string]any{}
	}
	var out Question
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		// Locking the exam serializes position allocation.
		if _, err := s.loadExam(ctx, q, "examId", examID, store.ForNoKeyUpdate); err != nil {
			return err
		}
		position, err := nextPosition(ctx, q, examID)
		if err != nil {
			return err
		}
		def, err := s.typeForNewQuestion(ctx, q, in.Type)
		if err != nil {
			return err
		}
		if err := checkConfig(def, in.Config); err != nil {
			return err
		}
		builtin, typeID := typeColumnsOf(def)
		id := ids.New(ids.Question)
		if _, err := q.Exec(ctx, `
			INSERT INTO questions (id, org_id, exam_id, position, builtin_type, type_id, prompt, config, points)
			VALUES ($1, app_org_id(), $2, $3, $4, $5, $6, $7::jsonb, $8)`,
			id, examID, position, builtin, typeID, prompt, store.JSON{V: in.Config}, in.Points); err != nil {
			return fmt.Errorf("create question: %w", err)
		}
		if err := appendRevision(ctx, q, id, RevisionCreated, "", caller.UserID); err != nil {
			return err
		}
		if out, err = s.loadQuestion(ctx, q, examID, id, store.NoLock); err != nil {
			return err
		}
		return s.audit(ctx, caller, "question.created", "question", id, nil, questionSnapshot(out))
	})
	return out, err
}

// lockPaper takes the exam's row lock, as the trigger that advances its
// paper version on every question write takes it (decision 0132), before
// the caller locks a question: every writer of an exam's questions locks
// the exam first, so two of them never wait for each other in opposite
// orders. An unknown exam locks nothing; the question's lookup refuses it.
func lockPaper(ctx context.Context, q store.Querier, examID string) error {
	if _, err := q.Exec(ctx, `SELECT FROM exams WHERE org_id = app_org_id() AND id = $1 FOR NO KEY UPDATE`, examID); err != nil {
		return fmt.Errorf("lock exam: %w", err)
	}
	return nil
}

// nextPosition returns the position after an exam's last question; the
// caller holds the exam's row lock. It must be its own statement: the
// statement that took the lock read the questions as of its start, before
// a concurrent create that held the lock committed, so a count taken there
// repeats a position under concurrency (read committed gives each new
// statement a fresh snapshot).
func nextPosition(ctx context.Context, q store.Querier, examID string) (int, error) {
	var count, last int
	if err := q.QueryRow(ctx, `SELECT count(*), coalesce(max(position), 0) FROM questions
		 WHERE org_id = app_org_id() AND exam_id = $1`, examID).Scan(&count, &last); err != nil {
		return 0, fmt.Errorf("next question position: %w", err)
	}
	if count >= MaxQuestions {
		return 0, errs.Conflict("EXAM_FULL", "an exam holds at most %d questions", MaxQuestions)
	}
	return last + 1, nil
}

func typeColumnsOf(def TypeDef) (builtin, typeID *string) {
	ref := def.Ref()
	if def.BuiltIn {
		return &ref, nil
	}
	return nil, &ref
}

func checkConfig(def TypeDef, config map[string]any) error {
	sch, err := compileSchema("configSchema", def.ConfigSchema)
	if err != nil {
		// A stored schema compiled when it was saved, but one saved before
		// its bounds grew (decision 0164) is refused here, with the reason.
		return errs.Invalid("type", "question type %s cannot be used until its owner changes it: %v", def.Key, err)
	}
	return validateConfig(sch, config)
}

// UpdateQuestion applies p. Changing the type is like creating a question
// of the new type; changing only the config keeps the current type, even a
// deprecated one (existing questions keep working). Changed content becomes the
// question's next revision (decision 0090).
func (s *Service) UpdateQuestion(ctx context.Context, examID, id string, p QuestionPatch) (Question, error) {
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
		out = before
		if p.Prompt != nil {
			if out.Prompt, err = text("prompt", *p.Prompt, true, 10000); err != nil {
				return err
			}
		}
		if p.Points != nil {
			if err := validPoints(*p.Points); err != nil {
				return err
			}
			out.Points = *p.Points
		}
		if p.Config != nil {
			out.Config = p.Config
		}
		if p.Type != nil && *p.Type != before.Type {
			def, err := s.typeForNewQuestion(ctx, q, *p.Type)
			if err != nil {
				return err
			}
			out.Def, out.Type = &def, def.Ref()
		}
		if p.Config != nil || out.Type != before.Type {
			if out.Def == nil {
				return Unresolved
			}
			if err := checkConfig(*out.Def, out.Config); err != nil {
				return err
			}
		}
		out, err = s.saveRevision(ctx, caller, before, out, RevisionEdited, "")
		return err
	})
	return out, err
}

// DeleteQuestion removes a question and closes the gap in the order.
// Answers already submitted to it stay with their results.
func (s *Service) DeleteQuestion(ctx context.Context, examID, id string) error {
	caller, err := tenancy.Authorize(ctx, WriteExams)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		if _, err := s.loadExam(ctx, q, "examId", examID, store.ForNoKeyUpdate); err != nil {
			return err
		}
		before, err := s.loadQuestion(ctx, q, examID, id, store.ForUpdate)
		if err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `DELETE FROM questions WHERE org_id = app_org_id() AND id = $1`, id); err != nil {
			return fmt.Errorf("delete question: %w", err)
		}
		if _, err := q.Exec(ctx, `UPDATE questions SET position = position - 1
			 WHERE org_id = app_org_id() AND exam_id = $1 AND position > $2`, examID, before.Position); err != nil {
			return fmt.Errorf("delete question: %w", err)
		}
		return s.audit(ctx, caller, "question.deleted", "question", id, questionSnapshot(before), nil)
	})
}

// ReorderQuestions sets the order of an exam's questions: ids must name
// every question of the exam exactly once.
func (s *Service) ReorderQuestions(ctx context.Context, examID string, order []string) ([]Question, error) {
	caller, err := tenancy.Authorize(ctx, WriteExams)
	if err != nil {
		return nil, err
	}
	var out []Question
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		if _, err := s.loadExam(ctx, q, "examId", examID, store.ForNoKeyUpdate); err != nil {
			return err
		}
		var current []string
		rows, err := q.Query(ctx, `SELECT id FROM questions WHERE org_id = app_org_id() AND exam_id = $1 ORDER BY position`, examID)
		if err == nil {
			current, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		if err != nil {
			return fmt.Errorf("reorder questions: %w", err)
		}
		if err := samePermutation(order, current); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `
			UPDATE questions q SET position = o.n, updated_at = now()
			  FROM unnest($2::text[]) WITH ORDINALITY AS o(id, n)
			 WHERE q.org_id = app_org_id() AND q.exam_id = $1 AND q.id = o.id`, examID, order); err != nil {
			return fmt.Errorf("reorder questions: %w", err)
		}
		if out, _, err = s.Questions(ctx, examID, AllQuestions); err != nil {
			return err
		}
		return s.audit(ctx, caller, "exam.questions_reordered", "exam", examID,
			map[string]any{"questionIds": current}, map[string]any{"questionIds": order})
	})
	return out, err
}

func samePermutation(order, current []string) error {
	seen := map[string]bool{}
	for i, id := range order {
		if seen[id] {
			return errs.Invalid(fmt.Sprintf("questionIds.%d", i), "repeats question %s", id)
		}
		seen[id] = true
	}
	for _, id := range current {
		if !seen[id] {
			return errs.Invalid("questionIds", "must list every question of the exam exactly once (missing %s)", id)
		}
	}
	if len(order) != len(current) {
		return errs.Invalid("questionIds", "names questions that are not in this exam")
	}
	return nil
}
