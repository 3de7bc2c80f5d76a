package scanning

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/answersheet"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/webhooks/event"
	"github.com/assessd/assessd/tenancy"
)

// Get returns one scan of the caller's organization with its pages.
func (s *Service) Get(ctx context.Context, id string) (Scan, error) {
	if _, err := tenancy.Authorize(ctx, ReadScans); err != nil {
		return Scan{}, err
	}
	if !ids.Valid(ids.Scan, id) {
		return Scan{}, errs.Invalid("id", "must be an answer sheet scan id (scn_...)")
	}
	q := s.db.Q(ctx)
	sc := Scan{ID: id}
	err := q.QueryRow(ctx, `SELECT exam_id, status, region, error, created_at, updated_at
		FROM answer_sheet_scans WHERE org_id = app_org_id() AND id = $1`, id).
		Scan(&sc.ExamID, &sc.Status, &sc.Region, &sc.Error, &sc.CreatedAt, &sc.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Scan{}, errs.NotFound("answer sheet scan")
	}
	if err != nil {
		return Scan{}, fmt.Errorf("get scan: %w", err)
	}
	rows, err := q.Query(ctx, `SELECT position, error_code, error FROM answer_sheet_scan_files
		WHERE org_id = app_org_id() AND scan_id = $1 AND error_code <> '' ORDER BY position`, id)
	if err != nil {
		return Scan{}, fmt.Errorf("get scan files: %w", err)
	}
	fileErrors, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PageError, error) {
		var e PageError
		return e, r.Scan(&e.File, &e.Reason, &e.Message)
	})
	if err != nil {
		return Scan{}, fmt.Errorf("get scan files: %w", err)
	}
	sc.Errors = fileErrors
	rows, err = q.Query(ctx, `SELECT page, file, read, user_id, sheet_page, answers, error_code, error, coalesce(result_id, '')
		FROM answer_sheet_scan_pages WHERE org_id = app_org_id() AND scan_id = $1 ORDER BY page`, id)
	if err != nil {
		return Scan{}, fmt.Errorf("get scan pages: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var sh Sheet
		var e PageError
		var read bool
		if err := rows.Scan(&sh.Page, &e.File, &read, &sh.UserID, &sh.SheetPage, &sh.Answers, &e.Reason, &e.Message, &sh.ResultID); err != nil {
			return Scan{}, fmt.Errorf("get scan pages: %w", err)
		}
		sc.Pages++
		if !read {
			continue
		}
		sc.PagesRead++
		if sh.SheetPage > 0 {
			sc.Sheets = append(sc.Sheets, sh)
		}
		if e.Reason != "" {
			e.Page = sh.Page
			sc.Errors = append(sc.Errors, e)
		}
	}
	return sc, rows.Err()
}

// FileError is a file of a scan that cannot be used (not on the CDN, not
// found, not an image): it is reported, and the other files go on.
type FileError struct {
	Reason  string // stable UPPER_SNAKE code
	Message string
}

func (e *FileError) Error() string { return e.Message }

// fileError describes an answersheet input error, or is nil for others.
func fileError(err error) *FileError {
	var fe *FileError
	switch {
	case errors.As(err, &fe):
		return fe
	case errors.Is(err, answersheet.ErrTooLarge):
		return &FileError{"FILE_TOO_LARGE", "the file is too large"}
	case errors.Is(err, answersheet.ErrTooManyPages):
		return &FileError{"TOO_MANY_PAGES", fmt.Sprintf("the PDF has more than %d pages", answersheet.MaxPDFPages)}
	case errors.Is(err, answersheet.ErrUnsupportedFormat):
		return &FileError{"UNSUPPORTED_FORMAT", "the file is not a PNG, JPEG or PDF file"}
	case errors.Is(err, answersheet.ErrCorruptImage), errors.Is(err, answersheet.ErrUnreadablePDF):
		return &FileError{"UNREADABLE_FILE", "the file is damaged, truncated or encrypted"}
	}
	return nil
}

// Split turns the scan's files that are not split yet into pages, numbered
// across the files in order, and returns the pages not read yet. fetch
// gets a URL's bytes; a *FileError from it (or a file that is no page
// image) is recorded with the file, any other error is returned for a
// retry. Each file is marked split once its pages are stored, so a retry
// goes on where the last attempt stopped. A missing PDF tool is returned as
// answersheet.ErrPDFToolMissing.
func (s *Service) Split(ctx context.Context, scanID string, fetch func(ctx context.Context, url string) ([]byte, error)) ([]int, error) {
	q := s.db.Q(ctx)
	rows, err := q.Query(ctx, `SELECT position, url FROM answer_sheet_scan_files
		WHERE org_id = app_org_id() AND scan_id = $1 AND NOT split ORDER BY position`, scanID)
	if err != nil {
		return nil, fmt.Errorf("split scan: %w", err)
	}
	type file struct {
		position int
		url      string
	}
	files, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (file, error) {
		var f file
		return f, r.Scan(&f.position, &f.url)
	})
	if err != nil {
		return nil, fmt.Errorf("split scan: %w", err)
	}
	for _, f := range files {
		if err := s.splitFile(ctx, scanID, f.position, f.url, fetch); err != nil {
			return nil, err
		}
	}
	rows, err = q.Query(ctx, `SELECT page FROM answer_sheet_scan_pages
		WHERE org_id = app_org_id() AND scan_id = $1 AND NOT read ORDER BY page`, scanID)
	if err != nil {
		return nil, fmt.Errorf("split scan: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}

// splitFile turns one file into pages, each stored as soon as it is
// rasterized, so a PDF's pages are never held together (decision 0172).
// Its pages are numbered after the earlier files' and a retry stores the
// same numbers again over what a failed attempt left. The file is marked
// split last, with why it has no more pages when a *FileError stopped it.
func (s *Service) splitFile(ctx context.Context, scanID string, position int, url string, fetch func(ctx context.Context, url string) ([]byte, error)) error {
	q := s.db.Q(ctx)
	var data []byte
	var err error
	if url != "" {
		data, err = fetch(ctx, url)
	} else {
		err = q.QueryRow(ctx, `SELECT content FROM answer_sheet_scan_files
			WHERE org_id = app_org_id() AND scan_id = $1 AND position = $2`, scanID, position).Scan(&data)
	}
	var first int
	if err == nil {
		err = q.QueryRow(ctx, `SELECT coalesce(max(page), 0) + 1 FROM answer_sheet_scan_pages
			WHERE org_id = app_org_id() AND scan_id = $1 AND file < $2`, scanID, position).Scan(&first)
	}
	if err == nil {
		filePage := 0
		err = eachPage(ctx, data, func(img []byte) error {
			filePage++
			memory, err := answersheet.PageMemory(img)
			if err != nil {
				return err
			}
			if _, err := q.Exec(ctx, `INSERT INTO answer_sheet_scan_pages (scan_id, page, org_id, file, file_page, image, read_memory)
				VALUES ($1, $2, app_org_id(), $3, $4, $5, $6)
				ON CONFLICT (scan_id, page) DO UPDATE SET image = excluded.image, read_memory = excluded.read_memory`,
				scanID, first+filePage-1, position, filePage, img, memory); err != nil {
				return fmt.Errorf("store page: %w", err)
			}
			return nil
		})
	}
	fe := fileError(err)
	if err != nil && fe == nil {
		return err
	}
	code, message := "", ""
	if fe != nil {
		code, message = fe.Reason, fe.Message
	}
	if _, err := q.Exec(ctx, `UPDATE answer_sheet_scan_files SET split = true, content = NULL, error_code = $3, error = $4
		WHERE org_id = app_org_id() AND scan_id = $1 AND position = $2`, scanID, position, code, message); err != nil {
		return fmt.Errorf("split file: %w", err)
	}
	return nil
}

// eachPage calls store with each page of a file: an image as it is, a
// PDF's pages rasterized as PNG, one at a time.
func eachPage(ctx context.Context, data []byte, store func(img []byte) error) error {
	if !bytes.HasPrefix(data, []byte("%PDF-")) {
		if _, err := answersheet.CheckUpload(ctx, data); err != nil {
			return err
		}
		return store(data)
	}
	return answersheet.SplitPDFPages(ctx, data, func(_ int, png []byte) error { return store(png) })
}

// PageToRead is a page of a scan waiting to be read.
type PageToRead struct {
	ExamID string
	Image  []byte // nil once the page is read
}

// PageMemory is the memory reading a page holds at most
// (answersheet.PageMemory), without loading its image, so the reader can
// wait for it first; read is false once the page is read. A page split
// before its figure was kept counts as the most any page holds.
func (s *Service) PageMemory(ctx context.Context, scanID string, page int) (memory int64, read bool, err error) {
	var stored *int64
	err = s.db.Q(ctx).QueryRow(ctx, `SELECT read_memory, read FROM answer_sheet_scan_pages
		WHERE org_id = app_org_id() AND scan_id = $1 AND page = $2`, scanID, page).Scan(&stored, &read)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, true, nil // gone with its scan: nothing to read
	case err != nil:
		return 0, false, fmt.Errorf("page memory: %w", err)
	case stored == nil:
		return answersheet.MaxPageMemory, read, nil
	}
	return *stored, read, nil
}

// PageImage returns a page's image and its scan's exam.
func (s *Service) PageImage(ctx context.Context, scanID string, page int) (PageToRead, error) {
	var p PageToRead
	err := s.db.Q(ctx).QueryRow(ctx, `SELECT s.exam_id, p.image FROM answer_sheet_scan_pages p
		JOIN answer_sheet_scans s ON s.id = p.scan_id AND s.org_id = p.org_id
		WHERE p.org_id = app_org_id() AND p.scan_id = $1 AND p.page = $2 AND NOT p.read`, scanID, page).Scan(&p.ExamID, &p.Image)
	if errors.Is(err, pgx.ErrNoRows) {
		return PageToRead{}, nil // read already: a retried activity
	}
	if err != nil {
		return PageToRead{}, fmt.Errorf("page image: %w", err)
	}
	return p, nil
}

// Reading is what was read from one page: the student and answers, or why
// the page cannot be attributed.
type Reading struct {
	UserID    string
	SheetPage int
	Answers   []Answer
	Reason    string // an error code, "" when the page was read
	Message   string
}

// RecordPage stores a page's reading and drops its image. A page already
// read is left as it is.
func (s *Service) RecordPage(ctx context.Context, scanID string, page int, r Reading) error {
	if r.Answers == nil {
		r.Answers = []Answer{}
	}
	_, err := s.db.Q(ctx).Exec(ctx, `UPDATE answer_sheet_scan_pages
		SET read = true, image = NULL, user_id = $3, sheet_page = $4, answers = $5::jsonb, error_code = $6, error = $7
		WHERE org_id = app_org_id() AND scan_id = $1 AND page = $2 AND NOT read`,
		scanID, page, r.UserID, r.SheetPage, store.JSON{V: r.Answers}, r.Reason, r.Message)
	if err != nil {
		return fmt.Errorf("record page: %w", err)
	}
	return nil
}

// IsStudent reports whether userID names a student of the organization in
// ctx (no permission check: for the scanning activities).
func (s *Service) IsStudent(ctx context.Context, userID string) (bool, error) {
	u, err := s.users.LookupUser(ctx, userID)
	if errs.Is(err, errs.KindNotFound) || errs.Is(err, errs.KindInvalid) {
		return false, nil
	}
	return err == nil && u.Role == tenancy.RoleStudent, err
}

// actor is the scanning the platform does on its own.
var actor = audit.Actor{Kind: audit.ActorSystem, ID: "scanning"}

// Finish reports the pages whose reading failed for good (failures, by
// page, with a reason), submits one result per student whose sheet was read, with source
// "scan" and the doubtful answers flagged for review, through the normal
// submission path (rules score now, AI-graded questions go to grading), and
// completes the scan. A page that repeats a student's sheet page is
// reported instead of overwriting the first. Everything commits at once;
// a scan already finished is returned as it is.
func (s *Service) Finish(ctx context.Context, scanID string, failures map[int]string) (Scan, error) {
	err := s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		var examID, status string
		err := q.QueryRow(ctx, `SELECT exam_id, status FROM answer_sheet_scans
			WHERE org_id = app_org_id() AND id = $1 FOR UPDATE`, scanID).Scan(&examID, &status)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.NotFound("answer sheet scan") // deleted with its exam
		}
		if err != nil {
			return fmt.Errorf("finish scan: %w", err)
		}
		if status != StatusRunning {
			return nil
		}
		for page, reason := range failures {
			if err := s.RecordPage(ctx, scanID, page, Reading{Reason: "READ_FAILED", Message: reason}); err != nil {
				return err
			}
		}
		sheets, err := s.readSheets(ctx, scanID)
		if err != nil {
			return err
		}
		results := 0
		for _, st := range sheets {
			if err := s.submit(asScanning(ctx), scanID, examID, st); err != nil {
				return err
			}
			results++
		}
		if _, err := q.Exec(ctx, `UPDATE answer_sheet_scans SET status = 'completed', updated_at = now()
			WHERE org_id = app_org_id() AND id = $1`, scanID); err != nil {
			return fmt.Errorf("finish scan: %w", err)
		}
		if err = audit.Record(ctx, s.db, audit.Entry{Action: "answer_sheet_scan.completed", Actor: actor,
			Target: audit.Target{Type: "answer_sheet_scan", ID: scanID}, After: map[string]any{"examId": examID, "results": results}}); err != nil {
			return err
		}
		sc, err := s.load(ctx, scanID)
		if err != nil {
			return err
		}
		return s.content.Events.Record(ctx, s.db, event.AnswerSheetScanCompleted, sc)
	})
	if err != nil {
		return Scan{}, err
	}
	return s.load(ctx, scanID)
}

// studentSheet is the pages of one student's sheet in a scan.
type studentSheet struct {
	userID string
	pages  []int
	answer []Answer
}

// readSheets groups the identified pages of a scan by student, in page
// order, and records an error on each page repeating a sheet page.
func (s *Service) readSheets(ctx context.Context, scanID string) ([]*studentSheet, error) {
	q := s.db.Q(ctx)
	rows, err := q.Query(ctx, `SELECT page, user_id, sheet_page, answers FROM answer_sheet_scan_pages
		WHERE org_id = app_org_id() AND scan_id = $1 AND read AND error_code = '' AND user_id <> '' AND result_id IS NULL
		ORDER BY page`, scanID)
	if err != nil {
		return nil, fmt.Errorf("finish scan: %w", err)
	}
	type read struct {
		page, sheetPage int
		userID          string
		answers         []Answer
	}
	pages, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (read, error) {
		var p read
		return p, r.Scan(&p.page, &p.userID, &p.sheetPage, &p.answers)
	})
	if err != nil {
		return nil, fmt.Errorf("finish scan: %w", err)
	}
	var out []*studentSheet
	byUser := map[string]*studentSheet{}
	seen := map[string]map[int]bool{}
	for _, p := range pages {
		if seen[p.userID][p.sheetPage] {
			if _, err := q.Exec(ctx, `UPDATE answer_sheet_scan_pages SET error_code = 'DUPLICATE_SHEET',
				error = 'an earlier page of this scan is the same page of the same student''s sheet'
				WHERE org_id = app_org_id() AND scan_id = $1 AND page = $2`, scanID, p.page); err != nil {
				return nil, fmt.Errorf("finish scan: %w", err)
			}
			continue
		}
		if seen[p.userID] == nil {
			seen[p.userID] = map[int]bool{}
			byUser[p.userID] = &studentSheet{userID: p.userID}
			out = append(out, byUser[p.userID])
		}
		seen[p.userID][p.sheetPage] = true
		st := byUser[p.userID]
		st.pages = append(st.pages, p.page)
		st.answer = append(st.answer, p.answers...)
	}
	return out, nil
}

// submit submits one student's result and links the sheet's pages to it.
// A student the submission path refuses (deleted meanwhile) is reported on
// the pages.
func (s *Service) submit(ctx context.Context, scanID, examID string, st *studentSheet) error {
	in := assessment.NewResult{UserID: st.userID, Source: assessment.SourceScan}
	var review []string
	for _, a := range st.answer {
		if a.Value != nil {
			in.Answers = append(in.Answers, assessment.NewAnswer{QuestionID: a.QuestionID, Value: a.Value})
		}
		if a.NeedsReview {
			review = append(review, a.QuestionID)
		}
	}
	q := s.db.Q(ctx)
	r, err := s.content.SubmitResult(ctx, examID, in)
	if e, ok := errs.As(err); ok && e.Kind == errs.KindInvalid {
		_, err = q.Exec(ctx, `UPDATE answer_sheet_scan_pages SET error_code = 'RESULT_REFUSED', error = $3
			WHERE org_id = app_org_id() AND scan_id = $1 AND page = ANY($2)`, scanID, st.pages, e.Message)
		return err
	}
	if err != nil {
		return err
	}
	if err := s.content.FlagForReview(ctx, r.ID, review); err != nil {
		return err
	}
	_, err = q.Exec(ctx, `UPDATE answer_sheet_scan_pages SET result_id = $3
		WHERE org_id = app_org_id() AND scan_id = $1 AND page = ANY($2)`, scanID, st.pages, r.ID)
	return err
}

// Unfinished returns those of scanIDs still running, the outbox route's
// unfinished subjects.
func (s *Service) Unfinished(ctx context.Context, scanIDs []string) ([]string, error) {
	return store.Strings(ctx, s.db.Q(ctx), `
		SELECT id FROM answer_sheet_scans WHERE org_id = app_org_id() AND id = ANY($1) AND status = 'running'`, scanIDs)
}

// Fail finishes a running scan as failed with a reason the client may see.
func (s *Service) Fail(ctx context.Context, scanID, reason string) error {
	return s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		tag, err := q.Exec(ctx, `UPDATE answer_sheet_scans SET status = 'failed', error = $2, updated_at = now()
			WHERE org_id = app_org_id() AND id = $1 AND status = 'running'`, scanID, reason)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		err = audit.Record(ctx, s.db, audit.Entry{Action: "answer_sheet_scan.failed", Actor: actor,
			Target: audit.Target{Type: "answer_sheet_scan", ID: scanID}, After: map[string]any{"error": reason}})
		return err
	})
}

// Questions returns the exam and its questions as printed on its sheets,
// for reading them (no permission check: for the scanning activities).
func (s *Service) Questions(ctx context.Context, examID string) (assessment.Exam, []assessment.SheetQuestion, error) {
	return s.content.AnswerSheet(asScanning(ctx), examID)
}

// load is Get without the permission check, for the workflow.
func (s *Service) load(ctx context.Context, scanID string) (Scan, error) {
	return s.Get(asScanning(ctx), scanID)
}

// asScanning acts as the platform's scanning in the organization ctx is
// scoped to: results it submits are audited as the system's.
func asScanning(ctx context.Context) context.Context {
	orgID, _ := store.OrgID(ctx)
	return tenancy.WithCaller(ctx, &tenancy.Caller{Kind: tenancy.KindSystem, OrgID: orgID, UserID: actor.ID,
		Role: tenancy.RoleOwner, Scopes: tenancy.AllScopes})
}
