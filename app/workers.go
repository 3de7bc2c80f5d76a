package app

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/assessd/assessd/activities"
	"github.com/assessd/assessd/ai"
	"github.com/assessd/assessd/assessment"
	"github.com/assessd/assessd/generation"
	"github.com/assessd/assessd/grading"
	"github.com/assessd/assessd/media"
	"github.com/assessd/assessd/outbox"
	"github.com/assessd/assessd/store"
	"github.com/assessd/assessd/workflows"
)

// WorkerConfig is what one region's grading worker needs: that region's
// AI provider, the media CDN fetcher and the metrics.
type WorkerConfig struct {
	Region   string
	Provider ai.Provider
	Fetcher  *media.Fetcher
	Metrics  *activities.Metrics
}

// NewWorker returns a worker that polls only cfg.Region's task queue and
// runs the grading and generation workflows with that region's provider.
// An unknown region is an error.
func NewWorker(c client.Client, db *store.DB, cfg WorkerConfig) (worker.Worker, error) {
	queue, err := workflows.RegionTaskQueue(cfg.Region)
	if err != nil {
		return nil, err
	}
	w := worker.New(c, queue, worker.Options{MaxConcurrentActivityExecutionSize: 32})
	w.RegisterWorkflow(workflows.GradeResult)
	w.RegisterWorkflow(workflows.GenerateExam)
	content := assessment.NewService(db)
	g := &activities.Grading{Store: grading.NewStore(content), Provider: cfg.Provider, Fetcher: cfg.Fetcher, Region: cfg.Region, Metrics: cfg.Metrics}
	g.Register(w)
	gen := &activities.Generation{Store: generation.NewService(db, content), Provider: cfg.Provider, Region: cfg.Region}
	gen.Register(w)
	return w, nil
}

// NewDispatcher returns the outbox dispatcher that starts the grading and
// generation workflows with c; its metrics go to reg.
func NewDispatcher(c client.Client, db *store.DB, reg prometheus.Registerer, opts workflows.DispatchOptions) *workflows.Dispatcher {
	content := assessment.NewService(db)
	gen := generation.NewService(db, content)
	return workflows.NewDispatcher(c, outbox.NewStore(db), map[outbox.Kind]workflows.Route{
		outbox.KindGrading:    workflows.GradingRoute(content.FailGrading),
		outbox.KindGeneration: workflows.GenerationRoute(gen.Fail),
	}, reg, opts)
}
