package assessment

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/text/language"

	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// Exam is a named, ordered set of questions in one language.
type Exam struct {
	ID              string
	FolderID        string // "" when the exam is in no folder
	Name            string
	Description     string
	Language        string // canonical BCP 47 tag
	DurationMinutes int    // 0 when untimed
	QuestionCount   int
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// NewExam is the input of CreateExam.
type NewExam struct {
	Name            string
	Language        string
	FolderID        string
	Description     string
	DurationMinutes int
}

// ExamPatch changes the fields that are set. FolderID "" takes the exam
// out of its folder; DurationMinutes 0 makes it untimed.
type ExamPatch struct {
	Name            *string
	Language        *string
	FolderID        *string
	Description     *string
	DurationMinutes *int
}

// ExamFilter narrows Exams. FolderID "root" selects exams in no folder;
// Query matches a part of the name, case-insensitively.
type ExamFilter struct {
	FolderID string
	Query    string
}

// maxDuration is a day: longer "exams" are data errors.
const maxDuration = 24 * 60

const examColumns = `e.id, coalesce(e.folder_id, ''), e.name, e.description, e.language,
	coalesce(e.duration_minutes, 0),
	(SELECT count(*) FROM questions q WHERE q.org_id = app_org_id() AND q.exam_id = e.id),
	e.created_at, e.updated_at`

func scanExam(row pgx.Row) (Exam, error) {
	var e Exam
	err := row.Scan(&e.ID, &e.FolderID, &e.Name, &e.Description, &e.Language, &e.DurationMinutes,
		&e.QuestionCount, &e.CreatedAt, &e.UpdatedAt)
	return e, err
}

func examSnapshot(e Exam) map[string]any {
	return map[string]any{"name": e.Name, "folderId": e.FolderID, "description": e.Description,
		"language": e.Language, "durationMinutes": e.DurationMinutes}
}

// parseLanguage validates a BCP 47 tag and returns its canonical form.
func parseLanguage(tag string) (string, error) {
	tag = strings.TrimSpace(tag)
	if tag == "" {
		return "", errs.Invalid("language", "is required (a BCP 47 language tag such as en or pt-BR)")
	}
	t, err := language.Parse(tag)
	if err != nil || t == language.Und || len(tag) > 35 {
		return "", errs.Invalid("language", "must be a valid BCP 47 language tag such as en or pt-BR")
	}
	return t.String(), nil
}

func validDuration(m int) error {
	if m < 0 || m > maxDuration {
		return errs.Invalid("durationMinutes", "must be between 1 and %d minutes (0 or absent for untimed)", maxDuration)
	}
	return nil
}

// Exams lists exams, oldest first.
func (s *Service) Exams(ctx context.Context, f ExamFilter, p paging.Page) ([]Exam, string, error) {
	if _, err := tenancy.Authorize(ctx, ReadExams); err != nil {
		return nil, "", err
	}
	if f.FolderID != "" && f.FolderID != "root" {
		if err := checkID("folderId", ids.Folder, f.FolderID, "a folder"); err != nil {
			return nil, "", err
		}
	}
	if len(f.Query) > 200 {
		return nil, "", errs.Invalid("q", "must be at most 200 characters")
	}
	out, next, err := store.ListPage(ctx, s.db.Q(ctx), p, scanExam, func(e Exam) string { return e.ID }, `
		SELECT `+examColumns+` FROM exams e
		 WHERE e.org_id = app_org_id()
		   AND ($1 = '' OR ($1 = 'root' AND e.folder_id IS NULL) OR e.folder_id = $1)
		   AND ($2 = '' OR strpos(lower(e.name), lower($2)) > 0)
		   AND e.id > $3
		 ORDER BY e.id LIMIT $4`, f.FolderID, f.Query, p.After, p.Limit())
	if err != nil {
		return nil, "", fmt.Errorf("list exams: %w", err)
	}
	return out, next, nil
}

// Exam returns one exam.
func (s *Service) Exam(ctx context.Context, id string) (Exam, error) {
	if _, err := tenancy.Authorize(ctx, ReadExams); err != nil {
		return Exam{}, err
	}
	return s.loadExam(ctx, s.db.Q(ctx), "id", id, store.NoLock)
}

func (s *Service) loadExam(ctx context.Context, q store.Querier, field, id string, lock store.RowLock) (Exam, error) {
	if err := checkID(field, ids.Exam, id, "an exam"); err != nil {
		return Exam{}, err
	}
	sql := `SELECT ` + examColumns + ` FROM exams e WHERE e.org_id = app_org_id() AND e.id = $1`
	sql += string(lock)
	e, err := scanExam(q.QueryRow(ctx, sql, id))
	if isNoRows(err) {
		return Exam{}, errs.NotFound("exam")
	}
	if err != nil {
		return Exam{}, fmt.Errorf("load exam: %w", err)
	}
	return e, nil
}

// checkFolder verifies that a folder id given for an exam exists, and
// keeps it from being deleted until ctx's transaction ends.
func (s *Service) checkFolder(ctx context.Context, q store.Querier, id string) error {
	if _, err := s.loadFolder(ctx, q, "folderId", id, store.ForKeyShare); err != nil {
		if errs.Is(err, errs.KindNotFound) {
			return errs.Invalid("folderId", "names no folder of this organization")
		}
		return err
	}
	return nil
}

// CreateExam adds an exam.
func (s *Service) CreateExam(ctx context.Context, in NewExam) (Exam, error) {
	caller, err := tenancy.Authorize(ctx, WriteExams)
	if err != nil {
		return Exam{}, err
	}
	e := Exam{FolderID: in.FolderID, DurationMinutes: in.DurationMinutes}
	if e.Name, err = text("name", in.Name, true, 200); err != nil {
		return Exam{}, err
	}
	if e.Language, err = parseLanguage(in.Language); err != nil {
		return Exam{}, err
	}
	if e.Description, err = text("description", in.Description, false, 5000); err != nil {
		return Exam{}, err
	}
	if err := validDuration(in.DurationMinutes); err != nil {
		return Exam{}, err
	}
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		if e.FolderID != "" {
			if err := s.checkFolder(ctx, q, e.FolderID); err != nil {
				return err
			}
		}
		id := ids.New(ids.Exam)
		if _, err := q.Exec(ctx, `
			INSERT INTO exams (id, org_id, folder_id, name, description, language, duration_minutes)
			VALUES ($1, app_org_id(), nullif($2, ''), $3, $4, $5, nullif($6, 0))`,
			id, e.FolderID, e.Name, e.Description, e.Language, e.DurationMinutes); err != nil {
			return fmt.Errorf("create exam: %w", err)
		}
		if e, err = s.loadExam(ctx, q, "id", id, store.NoLock); err != nil {
			return err
		}
		return s.audit(ctx, caller, "exam.created", "exam", id, nil, examSnapshot(e))
	})
	return e, err
}

// UpdateExam applies p to exam id.
func (s *Service) UpdateExam(ctx context.Context, id string, p ExamPatch) (Exam, error) {
	caller, err := tenancy.Authorize(ctx, WriteExams)
	if err != nil {
		return Exam{}, err
	}
	var e Exam
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		before, err := s.loadExam(ctx, q, "id", id, store.ForNoKeyUpdate)
		if err != nil {
			return err
		}
		e = before
		if p.Name != nil {
			if e.Name, err = text("name", *p.Name, true, 200); err != nil {
				return err
			}
		}
		if p.Language != nil {
			if e.Language, err = parseLanguage(*p.Language); err != nil {
				return err
			}
		}
		if p.Description != nil {
			if e.Description, err = text("description", *p.Description, false, 5000); err != nil {
				return err
			}
		}
		if p.DurationMinutes != nil {
			if err := validDuration(*p.DurationMinutes); err != nil {
				return err
			}
			e.DurationMinutes = *p.DurationMinutes
		}
		if p.FolderID != nil && *p.FolderID != before.FolderID {
			if *p.FolderID != "" {
				if err := s.checkFolder(ctx, q, *p.FolderID); err != nil {
					return err
				}
			}
			e.FolderID = *p.FolderID
		}
		if _, err := q.Exec(ctx, `
			UPDATE exams SET name = $2, language = $3, description = $4, duration_minutes = nullif($5, 0),
			       folder_id = nullif($6, ''), updated_at = now()
			 WHERE org_id = app_org_id() AND id = $1`,
			id, e.Name, e.Language, e.Description, e.DurationMinutes, e.FolderID); err != nil {
			return fmt.Errorf("update exam: %w", err)
		}
		if e, err = s.loadExam(ctx, q, "id", id, store.NoLock); err != nil {
			return err
		}
		return s.audit(ctx, caller, "exam.updated", "exam", id, examSnapshot(before), examSnapshot(e))
	})
	return e, err
}

// DeleteExam removes an exam with its questions and results (decision
// 0022); the audit entry keeps what it was.
func (s *Service) DeleteExam(ctx context.Context, id string) error {
	caller, err := tenancy.Authorize(ctx, WriteExams)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		// The results go first, in id order, then the exam's row: a
		// correction or a finishing grade holds its result's row and may
		// then need the exam's (the foreign key of a new summary row),
		// so the deletion must not hold the exam's while it waits for
		// theirs (decision 0149).
		if _, err := q.Exec(ctx, `SELECT FROM results WHERE org_id = app_org_id() AND exam_id = $1 ORDER BY id FOR UPDATE`, id); err != nil {
			return fmt.Errorf("lock the exam's results: %w", err)
		}
		e, err := s.loadExam(ctx, q, "id", id, store.ForUpdate)
		if err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `DELETE FROM exams WHERE org_id = app_org_id() AND id = $1`, id); err != nil {
			return fmt.Errorf("delete exam: %w", err)
		}
		return s.audit(ctx, caller, "exam.deleted", "exam", id, examSnapshot(e), nil)
	})
}

// ExamExists reports whether exam id is one of the organization's, as a
// NotFound error otherwise, and keeps it from being deleted until ctx's
// transaction ends, so that a row written to refer to it there meets no
// deletion. It is for other services acting for an already authorized
// caller (embed sessions, scans) and checks no permission itself.
func (s *Service) ExamExists(ctx context.Context, id string) error {
	_, err := s.loadExam(ctx, s.db.Q(ctx), "examId", id, store.ForKeyShare)
	return err
}
