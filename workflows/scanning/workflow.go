// Package scanning is the answer-sheet scanning workflow: ScanSheets splits
// a scan's files into pages, reads every page and submits the results. Its
// activities are in activities/scanning; it is started from the outbox
// (Route).
//
// Path of a scan: POST /exams/{examId}/answer-sheet-scans stores the scan,
// its files and its outbox row in one transaction; the dispatcher starts
// ScanSheets on the region's task queue; SplitScan (CDN fetches, PDF
// rasterizing), one ReadPage per page (corner marks, QR code, bubbles, the
// region's vision model for written boxes) and FinishScan (one result per
// student, source "scan") run on that region's worker.
package scanning

import (
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/workflows"
)

// Activity names, registered by the worker (activities/scanning). They are
// part of recorded histories: renaming one breaks running workflows.
const (
	ActivitySplitScan  = "SplitScan"
	ActivityReadPage   = "ReadPage"
	ActivityFinishScan = "FinishScan"
	ActivityFailScan   = "FailScan"
)

// MaxParallelPages bounds the pages one scan reads at once.
const MaxParallelPages = 4

// Input identifies a scan; it is the input of the workflow and of
// SplitScan.
type Input struct {
	OrgID  string
	ScanID string
	Region string
}

// PageInput identifies one page of a scan (ReadPage).
type PageInput struct {
	OrgID  string
	ScanID string
	Page   int
	Region string
}

// PageFailure is a page whose reading failed for good.
type PageFailure struct {
	Page   int
	Reason string
}

// FinishInput closes a scan (FinishScan): failed pages are reported, every
// student's sheet becomes a result, and the scan is completed.
type FinishInput struct {
	OrgID    string
	ScanID   string
	Failures []PageFailure
}

// FailInput fails a scan with a reason (FailScan).
type FailInput struct {
	OrgID  string
	ScanID string
	Reason string
}

// Outcome is the final state of a scan, the workflow's output.
type Outcome struct {
	Status  string
	Pages   int
	Results []string
	Errors  int
}

// Route is how an outbox scanning row becomes a ScanSheets workflow, with id
// "scan-<subject id>" so a second start joins the first; a scan is
// unfinished while running, and abandoning it fails it.
func Route(scans workflows.Subjects) workflows.Route {
	return workflows.Route{Workflow: ScanSheets, IDPrefix: "scan-", Subjects: scans, Input: func(it outbox.Item) any {
		return Input{OrgID: it.OrgID, ScanID: it.SubjectID, Region: it.Region}
	}}
}

// ScanSheets splits the scan's files into pages, reads them at most
// MaxParallelPages at a time and finishes the scan. A page that cannot be
// attributed is recorded by ReadPage and is no failure; a page whose
// reading fails for good after retries is reported with the scan's other
// page errors. Only a scan whose files cannot be split fails.
func ScanSheets(ctx workflow.Context, in Input) (Outcome, error) {
	// Splitting rasterizes PDFs of up to 200 pages.
	ctx = workflow.WithActivityOptions(ctx, workflows.AIActivityOptions(5*time.Minute, 20*time.Second, 6))
	// Finishing or failing must happen even if the workflow is being
	// cancelled.
	finishCtx, _ := workflow.NewDisconnectedContext(ctx)
	var pages []int
	if err := workflow.ExecuteActivity(ctx, ActivitySplitScan, in).Get(ctx, &pages); err != nil {
		reason := workflows.FailureReason(err)
		if ferr := workflow.ExecuteActivity(finishCtx, ActivityFailScan, FailInput{OrgID: in.OrgID, ScanID: in.ScanID, Reason: reason}).Get(finishCtx, nil); ferr != nil {
			return Outcome{}, ferr
		}
		return Outcome{Status: "failed"}, nil
	}
	failed := workflows.ForEach(ctx, pages, MaxParallelPages, func(ctx workflow.Context, page int) error {
		return workflow.ExecuteActivity(ctx, ActivityReadPage, PageInput{
			OrgID: in.OrgID, ScanID: in.ScanID, Page: page, Region: in.Region,
		}).Get(ctx, nil)
	})
	var failures []PageFailure
	for i, page := range pages {
		if reason, ok := failed[i]; ok {
			failures = append(failures, PageFailure{Page: page, Reason: reason})
		}
	}
	slices.SortFunc(failures, func(a, b PageFailure) int { return a.Page - b.Page })
	var out Outcome
	err := workflow.ExecuteActivity(finishCtx, ActivityFinishScan, FinishInput{
		OrgID: in.OrgID, ScanID: in.ScanID, Failures: failures,
	}).Get(finishCtx, &out)
	return out, err
}
