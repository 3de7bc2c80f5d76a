// Package scanning holds the answer-sheet scanning workflow's activities
// (workflows/scanning): splitting a scan's files into pages (files from the
// media CDN or uploaded), reading one page (corner marks, QR code, bubbles,
// and the region's vision model for written boxes), and finishing or
// failing the scan, all through the scans store (internal/scanning).
package scanning

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/assessd/assessd/activities"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/answersheet"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/membudget"
	"github.com/assessd/assessd/internal/scanning"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/workflows"
	wf "github.com/assessd/assessd/workflows/scanning"
)

// Scans is what scanning needs of the scans store. Writes are conditional
// (a file not split yet, a page not read yet, a scan still running), so a
// retried activity writes nothing twice. Calls run for the organization in
// ctx.
type Scans interface {
	Split(ctx context.Context, scanID string, fetch func(ctx context.Context, url string) ([]byte, error)) ([]int, error)
	PageMemory(ctx context.Context, scanID string, page int) (memory int64, read bool, err error)
	PageImage(ctx context.Context, scanID string, page int) (scanning.PageToRead, error)
	Questions(ctx context.Context, examID string) (assessment.Exam, []assessment.SheetQuestion, error)
	IsStudent(ctx context.Context, userID string) (bool, error)
	RecordPage(ctx context.Context, scanID string, page int, r scanning.Reading) error
	Finish(ctx context.Context, scanID string, failures map[int]string) (scanning.Scan, error)
	Fail(ctx context.Context, scanID, reason string) error
}

var _ Scans = (*scanning.Service)(nil)

// Activities are the scanning activities of one region's worker.
type Activities struct {
	Scans    Scans
	Provider ai.Provider
	Fetcher  *media.Fetcher
	Region   string
	Metrics  *Metrics
	// Memory bounds the scan files and page images held at once; nil
	// shares the worker process's budget (membudget.Worker).
	Memory *membudget.Budget
}

// memory is the budget the activities hold their files and pages in.
func (a *Activities) memory() *membudget.Budget {
	if a.Memory == nil {
		return membudget.Worker
	}
	return a.Memory
}

// Register registers the activities on w under the workflow's names.
func (a *Activities) Register(w worker.Registry) {
	w.RegisterActivityWithOptions(a.SplitScan, activity.RegisterOptions{Name: wf.ActivitySplitScan})
	w.RegisterActivityWithOptions(a.ReadPage, activity.RegisterOptions{Name: wf.ActivityReadPage})
	w.RegisterActivityWithOptions(a.FinishScan, activity.RegisterOptions{Name: wf.ActivityFinishScan})
	w.RegisterActivityWithOptions(a.FailScan, activity.RegisterOptions{Name: wf.ActivityFailScan})
}

// misrouted refuses a task of another region before any scan data reaches
// this region's provider (task queues already keep regions apart).
func (a *Activities) misrouted(region string) error {
	if region != a.Region {
		return workflows.Permanent(fmt.Sprintf("a %s scan reached a %s worker", region, a.Region), nil)
	}
	return nil
}

// SplitScan splits the scan's files into pages and returns the pages left
// to read. A file that cannot be used is reported with the scan; a worker
// without the PDF tools fails the scan with a clear reason.
func (a *Activities) SplitScan(ctx context.Context, in wf.Input) ([]int, error) {
	if err := a.misrouted(in.Region); err != nil {
		return nil, err
	}
	defer activities.Heartbeat(ctx, 5*time.Second)()
	// Files are split one at a time, each within this one reservation.
	held, err := a.memory().Acquire(ctx, answersheet.SplitMemory)
	if err != nil {
		return nil, err
	}
	defer a.memory().Release(held)
	pages, err := a.Scans.Split(store.WithOrg(ctx, in.OrgID), in.ScanID, a.fetch)
	if errors.Is(err, answersheet.ErrPDFToolMissing) {
		slog.ErrorContext(ctx, "answer-sheet scan cannot be split: poppler-utils is not installed on this worker", "scan", in.ScanID, "err", err)
		return nil, workflows.Permanent("the worker cannot read PDF files", err)
	}
	return pages, err
}

// fetch gets a file from the media CDN; what retrying cannot fix is a
// scanning.FileError.
func (a *Activities) fetch(ctx context.Context, url string) ([]byte, error) {
	f, err := a.Fetcher.FetchUpTo(ctx, url, answersheet.MaxUploadBytes)
	switch {
	case err == nil:
		return f.Data, nil
	case errors.Is(err, media.ErrNotOnCDN), errors.Is(err, media.ErrRedirectOffCDN):
		return nil, &scanning.FileError{Reason: "NOT_ON_CDN", Message: "the file is not on the media CDN"}
	case errors.Is(err, media.ErrTooLarge):
		return nil, &scanning.FileError{Reason: "FILE_TOO_LARGE", Message: "the file is too large"}
	case errors.Is(err, media.ErrUnsupportedType):
		return nil, &scanning.FileError{Reason: "UNSUPPORTED_FORMAT", Message: "the file is not a PNG, JPEG or PDF file"}
	case errors.Is(err, media.ErrNotFound):
		return nil, &scanning.FileError{Reason: "FILE_NOT_FOUND", Message: "the file was not found on the media CDN"}
	}
	return nil, fmt.Errorf("fetch %s: %w", url, err) // transient: retry
}

// pageErrors are the page reading errors that attribute a page to nobody,
// with their stable codes.
var pageErrors = []struct {
	err  error
	code string
}{
	{answersheet.ErrNoCornerMarks, "NO_CORNER_MARKS"},
	{answersheet.ErrNoQRCode, "NO_QR_CODE"},
	{answersheet.ErrBadSheetID, "BAD_SHEET_ID"},
	{answersheet.ErrForeignExam, "FOREIGN_EXAM"},
	{answersheet.ErrStaleSheet, "STALE_SHEET"},
	{answersheet.ErrCorruptImage, "UNREADABLE_FILE"},
	{answersheet.ErrTooLarge, "FILE_TOO_LARGE"},
	{answersheet.ErrUnsupportedFormat, "UNSUPPORTED_FORMAT"},
	{answersheet.ErrNothingToPrint, "NOTHING_TO_READ"},
}

// reviewBelow is the confidence under which a transcribed box needs review.
const reviewBelow = 0.8

// ReadPage reads one page and records what it holds: the student's answers
// (bubbles by mark recognition, written boxes by the region's vision
// model), or why the page belongs to nobody. A page already read is
// skipped, so a retry calls the provider no more.
func (a *Activities) ReadPage(ctx context.Context, in wf.PageInput) error {
	if err := a.misrouted(in.Region); err != nil {
		return err
	}
	defer activities.Heartbeat(ctx, 2*time.Second)()
	ctx = store.WithOrg(ctx, in.OrgID)
	// The page's memory is waited for before its image is loaded, and
	// given back once its pixels are read, before any transcription.
	memory, read, err := a.Scans.PageMemory(ctx, in.ScanID, in.Page)
	if err != nil || read {
		return err
	}
	held, err := a.memory().Acquire(ctx, memory)
	if err != nil {
		return err
	}
	release := sync.OnceFunc(func() { a.memory().Release(held) })
	defer release()
	p, err := a.Scans.PageImage(ctx, in.ScanID, in.Page)
	if err != nil || p.Image == nil {
		return err
	}
	start := time.Now()
	r, err := a.read(ctx, p, release)
	for _, pe := range pageErrors {
		if errors.Is(err, pe.err) {
			r, err = scanning.Reading{Reason: pe.code, Message: pe.err.Error()}, nil
		}
	}
	if err != nil {
		return err
	}
	if err := a.Scans.RecordPage(ctx, in.ScanID, in.Page, r); err != nil {
		return err
	}
	a.Metrics.page(in.OrgID, a.Region, r.Reason, time.Since(start))
	return nil
}

// read reads a page image, calling done once its pixels are no longer
// held; errors of pageErrors attribute it to nobody.
func (a *Activities) read(ctx context.Context, p scanning.PageToRead, done func()) (scanning.Reading, error) {
	exam, questions, err := a.Scans.Questions(ctx, p.ExamID)
	if err != nil {
		// Deleted since its page was loaded, and the scan with it.
		return scanning.Reading{}, workflows.PermanentIfGone(err, "the exam")
	}
	reader, err := answersheet.NewReader(exam, questions)
	if err != nil {
		return scanning.Reading{}, err
	}
	img, err := answersheet.DecodeImage(p.Image)
	if err != nil {
		return scanning.Reading{}, err
	}
	res, err := reader.ReadPage(img)
	done() // the image and its pixels are not used from here on

	if err != nil {
		return scanning.Reading{}, err
	}
	r := scanning.Reading{UserID: res.Sheet.UserID, SheetPage: res.Sheet.Page}
	if r.UserID != "" {
		student, err := a.Scans.IsStudent(ctx, r.UserID)
		if err != nil {
			return scanning.Reading{}, err
		}
		if !student {
			// Nothing of the page is kept: it belongs to nobody.
			return scanning.Reading{Reason: "NOT_A_STUDENT", Message: "the sheet's QR code names no student of this organization"}, nil
		}
	}
	for _, b := range res.Answers {
		r.Answers = append(r.Answers, scanning.Answer{QuestionID: b.QuestionID, Value: b.Value, Confidence: b.Confidence,
			NeedsReview: b.NeedsReview, Reason: b.Reason})
	}
	prompts := make(map[string]string, len(questions))
	for _, q := range questions {
		prompts[q.ID] = q.Prompt
	}
	for _, w := range res.Written {
		t, err := a.Provider.Transcribe(ctx, ai.TranscribeRequest{Region: a.Region, QuestionType: w.Type, Prompt: prompts[w.QuestionID], Image: w.PNG})
		if errors.Is(err, ai.ErrInvalidRequest) {
			return scanning.Reading{}, workflows.Permanent("the AI provider rejected the answer box", err)
		}
		if err != nil {
			return scanning.Reading{}, err
		}
		r.Answers = append(r.Answers, written(w, t))
	}
	if r.UserID == "" {
		r.Reason, r.Message = "NO_STUDENT", "the sheet has a name box and no student in its QR code: submit its answers as the named student's result"
	}
	return r, nil
}

// written is the answer a transcribed box gives: a number for numeric
// questions, the text otherwise, nothing when blank or unreadable.
func written(w answersheet.WrittenAnswer, t ai.Transcription) scanning.Answer {
	a := scanning.Answer{QuestionID: w.QuestionID, Confidence: t.Confidence}
	text := strings.TrimSpace(t.Text)
	switch {
	case t.Blank:
		a.Reason = "blank"
	case text == "":
		a.Reason = "unreadable"
	case w.Type == assessment.TypeNumeric:
		n, err := strconv.ParseFloat(strings.ReplaceAll(text, ",", "."), 64)
		if err != nil {
			a.Reason = "unreadable"
			break
		}
		a.Value = n
	default:
		a.Value = text
	}
	if a.Value == nil || t.Confidence < reviewBelow {
		a.NeedsReview = true
		if a.Reason == "" {
			a.Reason = "unsure"
		}
	}
	return a
}

// FinishScan reports the pages that failed, submits the results and
// completes the scan.
func (a *Activities) FinishScan(ctx context.Context, in wf.FinishInput) (wf.Outcome, error) {
	failures := make(map[int]string, len(in.Failures))
	for _, f := range in.Failures {
		failures[f.Page] = f.Reason
	}
	sc, err := a.Scans.Finish(store.WithOrg(ctx, in.OrgID), in.ScanID, failures)
	if err != nil {
		return wf.Outcome{}, workflows.PermanentIfGone(err, "the scan")
	}
	a.Metrics.finished(in.OrgID, a.Region, sc.Status)
	out := wf.Outcome{Status: sc.Status, Pages: sc.Pages, Errors: len(sc.Errors)}
	for _, s := range sc.Sheets {
		if s.ResultID != "" && !slices.Contains(out.Results, s.ResultID) {
			out.Results = append(out.Results, s.ResultID)
		}
	}
	return out, nil
}

// FailScan fails a scan whose files cannot be split.
func (a *Activities) FailScan(ctx context.Context, in wf.FailInput) error {
	if err := a.Scans.Fail(store.WithOrg(ctx, in.OrgID), in.ScanID, in.Reason); err != nil {
		return err
	}
	a.Metrics.finished(in.OrgID, a.Region, scanning.StatusFailed)
	return nil
}
