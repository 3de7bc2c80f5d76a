package app

import (
	"go.temporal.io/sdk/worker"

	scanningactivities "github.com/assessd/assessd/activities/scanning"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/scanning"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
	scanningworkflow "github.com/assessd/assessd/workflows/scanning"
)

// scanUploadRoute is the API route that also takes multipart uploads.
const scanUploadRoute = "POST /exams/{examId}/answer-sheet-scans"

// registerScanning registers the scanning workflow and its activities, with
// the region's provider and CDN fetcher, on w.
func registerScanning(w worker.Worker, db *store.DB, content *assessment.Service, cfg WorkerConfig) {
	w.RegisterWorkflow(scanningworkflow.ScanSheets)
	metrics := cfg.ScanMetrics
	if metrics == nil {
		metrics = scanningactivities.NewMetrics(nil, cfg.OrgLabel)
	}
	a := &scanningactivities.Activities{Scans: scanning.NewService(db, content, tenancy.NewService(db), cfg.Fetcher.OnCDN), Provider: cfg.Provider,
		Fetcher: cfg.Fetcher, Region: cfg.Region, Metrics: metrics, Memory: cfg.Memory}
	a.Register(w)
}
