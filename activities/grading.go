// Package activities holds the side effects of assessd's workflows: reading
// and writing results, fetching files from the media CDN and calling the
// AI provider of the worker's region.
package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/assessd/assessd/ai"
	"github.com/assessd/assessd/media"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/workflows"
)

// GradingInput is what grading one answer needs.
type GradingInput struct {
	QuestionType string
	Prompt       string
	Config       map[string]any
	Answer       any
	Points       float64
	// FileURLs are the URLs the type's grading.fileInputs resolved to.
	FileURLs []string
}

// SkippedFile is a file URL that was not attached, and why.
type SkippedFile struct {
	URL    string
	Reason string
}

// RecordedGrade is an answer's AI grade with its grading details.
type RecordedGrade struct {
	Score         float64
	MaxScore      float64
	Feedback      string
	Rationale     string
	Region        string
	AttachedFiles []string
	SkippedFiles  []SkippedFile
}

// GradingStore is what grading needs from the results store. Writes are
// idempotent: a retried activity writes the same values again.
type GradingStore interface {
	PendingAIAnswers(ctx context.Context, orgID, resultID string) ([]string, error)
	AIGradingInput(ctx context.Context, orgID, resultID, answerID string) (GradingInput, error)
	RecordAIGrade(ctx context.Context, orgID, resultID, answerID string, g RecordedGrade) error
	FinishResult(ctx context.Context, orgID, resultID string, failures []workflows.AnswerFailure) (workflows.ResultOutcome, error)
}

// Grading implements the grading workflow's activities for one region.
type Grading struct {
	Store    GradingStore
	Provider ai.Provider
	Fetcher  *media.Fetcher
	Region   string
	Metrics  *Metrics
}

// Register registers the activities on w under the workflow's names.
func (g *Grading) Register(w worker.Registry) {
	g.Metrics.initRegion(g.Region)
	w.RegisterActivityWithOptions(g.PendingAnswers, activity.RegisterOptions{Name: workflows.ActivityPendingAnswers})
	w.RegisterActivityWithOptions(g.GradeAnswer, activity.RegisterOptions{Name: workflows.ActivityGradeAnswer})
	w.RegisterActivityWithOptions(g.FinishResult, activity.RegisterOptions{Name: workflows.ActivityFinishResult})
}

// PendingAnswers lists the answers still awaiting AI grading.
func (g *Grading) PendingAnswers(ctx context.Context, in workflows.GradeResultInput) ([]string, error) {
	return g.Store.PendingAIAnswers(ctx, in.OrgID, in.ResultID)
}

// GradeAnswer fetches the answer's files from the media CDN (others are
// skipped and the skip recorded), asks the provider for a grade, and records
// it. Invalid requests fail for good; everything else is retried.
func (g *Grading) GradeAnswer(ctx context.Context, in workflows.GradeAnswerInput) error {
	if in.Region != g.Region {
		// Task queues already keep regions apart; this refuses a
		// misrouted task before any answer data reaches the provider.
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("a %s result reached a %s worker", in.Region, g.Region), workflows.ErrTypeInvalidRequest, nil)
	}
	defer heartbeat(ctx, 2*time.Second)()
	input, err := g.Store.AIGradingInput(ctx, in.OrgID, in.ResultID, in.AnswerID)
	if err != nil {
		return err
	}
	rec := RecordedGrade{Region: g.Region}
	var files []ai.File
	for _, u := range input.FileURLs {
		if !g.Fetcher.OnCDN(u) {
			rec.SkippedFiles = append(rec.SkippedFiles, SkippedFile{URL: u, Reason: "not on the media CDN"})
			g.Metrics.fileSkipped(g.Region, "not_on_cdn")
			continue
		}
		f, err := g.Fetcher.Fetch(ctx, u)
		if reason := skipReason(err); reason != "" {
			rec.SkippedFiles = append(rec.SkippedFiles, SkippedFile{URL: u, Reason: reason})
			g.Metrics.fileSkipped(g.Region, reason)
			continue
		}
		if err != nil {
			return fmt.Errorf("fetch %s: %w", u, err) // transient: retry
		}
		g.Metrics.fileFetched(g.Region)
		files = append(files, f)
		rec.AttachedFiles = append(rec.AttachedFiles, u)
	}
	grade, err := g.Provider.Grade(ctx, ai.GradeRequest{
		Region: g.Region, QuestionType: input.QuestionType, Prompt: input.Prompt, Config: input.Config,
		Answer: input.Answer, MaxScore: input.Points, Files: files,
	})
	if errors.Is(err, ai.ErrInvalidRequest) {
		return temporal.NewNonRetryableApplicationError("the AI provider rejected the grading request", workflows.ErrTypeInvalidRequest, err)
	}
	if err != nil {
		return err
	}
	rec.Score, rec.MaxScore, rec.Feedback, rec.Rationale = grade.Score, grade.MaxScore, grade.Feedback, grade.Rationale
	return g.Store.RecordAIGrade(ctx, in.OrgID, in.ResultID, in.AnswerID, rec)
}

// heartbeat reports the activity alive every interval until the returned
// function is called.
func heartbeat(ctx context.Context, interval time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

// skipReason names a fetch failure that retrying cannot fix, or "".
func skipReason(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, media.ErrNotOnCDN), errors.Is(err, media.ErrRedirectOffCDN):
		return "not on the media CDN"
	case errors.Is(err, media.ErrTooLarge):
		return "file too large"
	case errors.Is(err, media.ErrUnsupportedType):
		return "unsupported file type"
	case errors.Is(err, media.ErrNotFound):
		return "file not found"
	}
	return ""
}

// FinishResult totals the result and records the outcome.
func (g *Grading) FinishResult(ctx context.Context, in workflows.FinishResultInput) (workflows.ResultOutcome, error) {
	out, err := g.Store.FinishResult(ctx, in.OrgID, in.ResultID, in.Failures)
	if err == nil {
		g.Metrics.finished(in.OrgID, g.Region, out.Status, time.Since(out.SubmittedAt))
	}
	return out, err
}

// Metrics are the grading metrics of a worker.
type Metrics struct {
	results  *prometheus.CounterVec
	duration *prometheus.HistogramVec
	files    *prometheus.CounterVec
	orgLabel func(string) string
}

// NewMetrics registers the grading metrics on reg; orgLabel bounds the org
// label's cardinality.
func NewMetrics(reg prometheus.Registerer, orgLabel func(string) string) *Metrics {
	m := &Metrics{
		results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_grading_results_total", Help: "Results finished by organization, region and outcome.",
		}, []string{"org", "region", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "assessd_grading_duration_seconds", Help: "Time from a result's submission to the end of its grading, by region.",
			Buckets: observability.LongBuckets,
		}, []string{"region"}),
		files: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_grading_files_total", Help: "Grading file inputs fetched or skipped, by region and outcome.",
		}, []string{"region", "outcome"}),
		orgLabel: orgLabel,
	}
	reg.MustRegister(m.results, m.duration, m.files)
	return m
}

func (m *Metrics) fileSkipped(region, reason string) {
	m.files.WithLabelValues(region, "skipped: "+reason).Inc()
}
func (m *Metrics) fileFetched(region string) { m.files.WithLabelValues(region, "fetched").Inc() }

// initRegion creates region's fetched-files series at zero, so dashboards
// show 0 rather than nothing before the first file.
func (m *Metrics) initRegion(region string) { m.files.WithLabelValues(region, "fetched") }

func (m *Metrics) finished(orgID, region, outcome string, d time.Duration) {
	org := m.orgLabel(orgID)
	// Both outcomes of an organization exist from its first result, so
	// its failure ratio is 0, not absent, while nothing failed.
	for _, o := range []string{"graded", "failed"} {
		m.results.WithLabelValues(org, region, o)
	}
	m.results.WithLabelValues(org, region, outcome).Inc()
	m.duration.WithLabelValues(region).Observe(d.Seconds())
}
