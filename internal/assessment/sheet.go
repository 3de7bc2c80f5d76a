package assessment

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// SheetQuestion is a question as a student sees it while taking the exam:
// the prompt and what is needed to answer, never the answer key.
type SheetQuestion struct {
	ID      string
	Type    string // the built-in or custom type key
	Prompt  string
	Points  float64
	Options []SheetOption // choice types only
	// MaxFiles and AcceptedTypes bound a file answer (file_upload only;
	// 0 and nil: no bound of the question's own).
	MaxFiles      int
	AcceptedTypes []string
}

// SheetOption is one choice, without whether it is correct.
type SheetOption struct {
	ID   string
	Text string
}

// AnswerSheet returns an exam's questions for a student taking it (scope
// exams:read, any role): configurations are reduced to what answering needs,
// so the answer key never reaches the student.
func (s *Service) AnswerSheet(ctx context.Context, examID string) (Exam, []SheetQuestion, error) {
	if _, err := tenancy.Authorize(ctx, ReadExams); err != nil {
		return Exam{}, nil, err
	}
	return s.Sheet(ctx, examID)
}

// Sheet is AnswerSheet without an authorization check of its own, for a
// service that authorized the read another way: a student reading their
// attempt holds attempts:read, not necessarily exams:read.
func (s *Service) Sheet(ctx context.Context, examID string) (Exam, []SheetQuestion, error) {
	exam, qs, err := s.examContent(ctx, examID)
	if err != nil {
		return Exam{}, nil, err
	}
	out := make([]SheetQuestion, 0, len(qs))
	for _, qu := range qs {
		if qu.Def == nil {
			continue // its type no longer resolves: it cannot be answered
		}
		sq := SheetQuestion{ID: qu.ID, Type: qu.Def.Key, Prompt: qu.Prompt, Points: qu.Points}
		options, _ := qu.Config["options"].([]any)
		for _, o := range options {
			opt, _ := o.(map[string]any)
			id, _ := opt["id"].(string)
			text, _ := opt["text"].(string)
			sq.Options = append(sq.Options, SheetOption{ID: id, Text: text})
		}
		if n, ok := qu.Config["maxFiles"].(float64); ok {
			sq.MaxFiles = int(n)
		}
		accepted, _ := qu.Config["acceptedTypes"].([]any)
		for _, a := range accepted {
			if t, ok := a.(string); ok {
				sq.AcceptedTypes = append(sq.AcceptedTypes, t)
			}
		}
		out = append(out, sq)
	}
	return exam, out, nil
}

// ExamContent returns an exam with all its questions in order, their types
// resolved: the whole content, answer keys included, for staff.
func (s *Service) ExamContent(ctx context.Context, examID string) (Exam, []Question, error) {
	if _, err := tenancy.Authorize(ctx, ReadQuestions); err != nil {
		return Exam{}, nil, err
	}
	return s.examContent(ctx, examID)
}

// examContent loads an exam and all its questions (at most MaxQuestions);
// the caller has been authorized.
func (s *Service) examContent(ctx context.Context, examID string) (Exam, []Question, error) {
	q := s.db.Q(ctx)
	exam, err := s.loadExam(ctx, q, "examId", examID, store.NoLock)
	if err != nil {
		return Exam{}, nil, err
	}
	rows, err := q.Query(ctx, `SELECT `+questionColumns+` FROM questions WHERE org_id = app_org_id() AND exam_id = $1 ORDER BY position`, examID)
	if err != nil {
		return Exam{}, nil, fmt.Errorf("exam content: %w", err)
	}
	qs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Question, error) { return scanQuestion(r) })
	if err != nil {
		return Exam{}, nil, fmt.Errorf("exam content: %w", err)
	}
	return exam, qs, s.resolve(ctx, q, qs)
}
