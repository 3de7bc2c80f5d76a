// Package scanning turns printed, filled-in and photographed answer sheets
// into results (decision 0085). It prints an exam's sheets, stores a scan
// with its files and its outbox row (the scanning workflow starts from
// there, on the organization's AI region), splits the files into pages,
// records what was read from each page, and submits one result per
// identified student through the normal submission path, with source
// "scan". Reading itself is internal/answersheet and the workflow's
// activities (activities/scanning); this package knows no workflow engine.
package scanning

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/assessd/assessd/internal/answersheet"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// Scan states.
const (
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
)

// Bounds of one request.
const (
	// MaxFiles bounds the files of one scan, MaxStudents the sheets of one
	// printout.
	MaxFiles    = 10
	MaxStudents = 500
	maxURLLen   = 2000
)

// Permissions: staff read scans with results:read and start them with
// results:write (a scan creates results).
var (
	ReadScans  = tenancy.Permission{Scope: tenancy.ScopeResultsRead, Roles: tenancy.StaffRoles}
	WriteScans = tenancy.Permission{Scope: tenancy.ScopeResultsWrite, Roles: tenancy.StaffRoles}
)

// Scan is a scan and what came of it so far.
type Scan struct {
	ID        string
	ExamID    string
	Status    string
	Region    string
	Error     string // why the scan failed
	Pages     int    // pages found in the files so far
	PagesRead int
	// Sheets are the pages read, in page order; Errors the pages and files
	// that could not be read or attributed.
	Sheets    []Sheet
	Errors    []PageError
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Sheet is what was read from one page.
type Sheet struct {
	Page      int
	UserID    string // "" for a sheet with a name box
	SheetPage int    // the page of the student's sheet
	ResultID  string // set once the student's result is submitted
	Answers   []Answer
}

// Answer is one answer read from a sheet.
type Answer struct {
	QuestionID  string  `json:"questionId"`
	Value       any     `json:"value"`
	Confidence  float64 `json:"confidence"`
	NeedsReview bool    `json:"needsReview"`
	// Reason says why NeedsReview is set: blank, multiple, faint or
	// unreadable.
	Reason string `json:"reason,omitempty"`
}

// PageError is a page (or, with Page 0, a whole file) that gave no result.
type PageError struct {
	Page    int
	File    int // 1-based position of the file in the request
	Reason  string
	Message string
}

// File is one file of a scan: a media-CDN URL or uploaded bytes.
type File struct {
	URL  string
	Data []byte
}

// Service prints sheets, stores scans and serves the scanning workflow's
// activities.
type Service struct {
	db      *store.DB
	content *assessment.Service
	users   *tenancy.Service
	onCDN   func(url string) bool
}

// NewService returns a Service; onCDN tells which URLs are on the media CDN
// (the only ones a scan may name).
func NewService(db *store.DB, content *assessment.Service, users *tenancy.Service, onCDN func(string) bool) *Service {
	return &Service{db: db, content: content, users: users, onCDN: onCDN}
}

// Sheets renders the printable answer sheets of an exam (staff with
// exams:read), one per student of userIDs, or one with a name box when there
// are none.
func (s *Service) Sheets(ctx context.Context, examID string, userIDs []string) ([]byte, error) {
	if _, err := tenancy.Authorize(ctx, assessment.ReadQuestions); err != nil {
		return nil, err
	}
	if len(userIDs) > MaxStudents {
		return nil, errs.Invalid("userId", "may be given at most %d times", MaxStudents)
	}
	students := make([]answersheet.Student, 0, len(userIDs))
	for _, id := range userIDs {
		u, err := s.student(ctx, id)
		if err != nil {
			return nil, err
		}
		students = append(students, answersheet.Student{UserID: u.ID, Name: u.Name})
	}
	exam, questions, err := s.content.AnswerSheet(ctx, examID)
	if err != nil {
		return nil, err
	}
	var pdf bytes.Buffer
	err = answersheet.Render(&pdf, exam, students, questions)
	if errors.Is(err, answersheet.ErrNothingToPrint) {
		return nil, errs.FailedPrecondition("NOTHING_TO_PRINT", "the exam has no question that can be answered on paper")
	}
	if err != nil {
		return nil, fmt.Errorf("render answer sheets: %w", err)
	}
	return pdf.Bytes(), nil
}

// student returns the student of the organization id names; anything else
// is an invalid userId.
func (s *Service) student(ctx context.Context, id string) (tenancy.User, error) {
	if !ids.Valid(ids.User, id) {
		return tenancy.User{}, errs.Invalid("userId", "must be a user id (usr_...)")
	}
	u, err := s.users.LookupUser(ctx, id)
	if errs.Is(err, errs.KindNotFound) || (err == nil && u.Role != tenancy.RoleStudent) {
		return tenancy.User{}, errs.Invalid("userId", "names no student of this organization")
	}
	return u, err
}

// Create stores a scan of an exam's sheets with its files and its outbox
// row: the dispatcher starts the scanning workflow after commit, on the
// region the organization has now. Uploads are checked first (format, size,
// a PDF's page count), so a bad file is refused here rather than reported
// later; URLs must be on the media CDN and are fetched by the worker.
func (s *Service) Create(ctx context.Context, examID string, files []File) (Scan, error) {
	caller, err := tenancy.Authorize(ctx, WriteScans)
	if err != nil {
		return Scan{}, err
	}
	if len(files) == 0 || len(files) > MaxFiles {
		return Scan{}, errs.Invalid("files", "must list 1 to %d files", MaxFiles)
	}
	for i, f := range files {
		if err := s.checkFile(ctx, i, f); err != nil {
			return Scan{}, err
		}
	}
	sc := Scan{ID: ids.New(ids.Scan), ExamID: examID, Status: StatusRunning}
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		if err := s.content.ExamExists(ctx, examID); err != nil {
			return err
		}
		q := s.db.Q(ctx)
		if err := q.QueryRow(ctx, `INSERT INTO answer_sheet_scans (id, org_id, exam_id, requested_by, region, status)
			VALUES ($1, app_org_id(), $2, $3, `+tenancy.AIRegionSQL+`, 'running')
			RETURNING region, created_at, updated_at`, sc.ID, examID, caller.UserID).
			Scan(&sc.Region, &sc.CreatedAt, &sc.UpdatedAt); err != nil {
			return err
		}
		for i, f := range files {
			var content []byte
			if f.URL == "" {
				content = f.Data
			}
			if _, err := q.Exec(ctx, `INSERT INTO answer_sheet_scan_files (scan_id, position, org_id, url, content)
				VALUES ($1, $2, app_org_id(), $3, $4)`, sc.ID, i+1, f.URL, content); err != nil {
				return err
			}
		}
		if err := audit.Record(ctx, s.db, audit.Entry{Action: "answer_sheet_scan.requested", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "answer_sheet_scan", ID: sc.ID},
			After:  map[string]any{"examId": examID, "region": sc.Region, "files": len(files)}}); err != nil {
			return err
		}
		return outbox.Add(ctx, q, outbox.KindScanning, sc.ID, sc.Region)
	})
	if err != nil {
		return Scan{}, fmt.Errorf("create scan: %w", err)
	}
	return sc, nil
}

// checkFile checks the i-th file of a request.
func (s *Service) checkFile(ctx context.Context, i int, f File) error {
	field := fmt.Sprintf("files.%d", i)
	if f.URL != "" {
		if len(f.URL) > maxURLLen || !s.onCDN(f.URL) {
			return errs.Invalid(field, "must be a URL on the media CDN")
		}
		return nil
	}
	_, err := answersheet.CheckUpload(ctx, f.Data)
	return UploadError(ctx, field, err)
}

// UploadError turns an error of answersheet's upload checks into the
// error of the request's field: the uploader's faults are invalid input,
// a missing PDF tool is the deployment's (logged, 503).
func UploadError(ctx context.Context, field string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, answersheet.ErrPDFToolMissing):
		slog.ErrorContext(ctx, "answer-sheet PDF upload refused: poppler-utils is not installed on this server", "err", err)
		return errs.Unavailable("PDF_TOOL_MISSING", "PDF uploads cannot be read right now; upload PNG or JPEG images")
	case errors.Is(err, answersheet.ErrTooLarge):
		e := errs.Invalid(field, "is too large: at most %d MiB, %d megapixels and %d MiB once decoded, which 16-bit colour images reach at about 18 megapixels",
			answersheet.MaxUploadBytes>>20, answersheet.MaxPixels/1_000_000, answersheet.MaxPageMemory>>20)
		e.Reason = "FILE_TOO_LARGE"
		return e
	case errors.Is(err, answersheet.ErrTooManyPages):
		return errs.Invalid(field, "has too many pages: at most %d", answersheet.MaxPDFPages)
	case errors.Is(err, answersheet.ErrUnsupportedFormat):
		return errs.Invalid(field, "must be a PNG, JPEG or PDF file")
	case errors.Is(err, answersheet.ErrCorruptImage), errors.Is(err, answersheet.ErrUnreadablePDF):
		return errs.Invalid(field, "cannot be read: the file is damaged, truncated or encrypted")
	}
	return err
}
