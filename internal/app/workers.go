package app

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	attemptactivities "github.com/assessd/assessd/activities/attempts"
	generationactivities "github.com/assessd/assessd/activities/generation"
	gradingactivities "github.com/assessd/assessd/activities/grading"
	ltiscoreactivities "github.com/assessd/assessd/activities/ltiscores"
	scanningactivities "github.com/assessd/assessd/activities/scanning"
	webhookactivities "github.com/assessd/assessd/activities/webhooks"
	"github.com/assessd/assessd/api"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/delivery"
	"github.com/assessd/assessd/internal/generation"
	"github.com/assessd/assessd/internal/lti"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/platform/egress"
	"github.com/assessd/assessd/internal/platform/membudget"
	"github.com/assessd/assessd/internal/scanning"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/webhooks"
	"github.com/assessd/assessd/internal/webhooks/event"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/workflows"
	attemptworkflow "github.com/assessd/assessd/workflows/attempts"
	generationworkflow "github.com/assessd/assessd/workflows/generation"
	gradingworkflow "github.com/assessd/assessd/workflows/grading"
	ltiscoreworkflow "github.com/assessd/assessd/workflows/ltiscores"
	scanningworkflow "github.com/assessd/assessd/workflows/scanning"
	webhookworkflow "github.com/assessd/assessd/workflows/webhooks"
)

// WorkerConfig is what one region's worker needs: that region's AI
// provider, the media CDN fetcher and the grading metrics.
type WorkerConfig struct {
	Region   string
	Provider ai.Provider
	Fetcher  *media.Fetcher
	Metrics  *gradingactivities.Metrics
	// Registry takes the metrics the worker's other workflows register
	// (shared by the regions of one process); nil leaves them unregistered.
	Registry prometheus.Registerer
	// OrgLabel bounds the org label of the metrics registered on Registry
	// (observability.Metrics.Org); nil labels them with the ids as they are.
	OrgLabel func(orgID string) string
	// ScanMetrics are the scanning metrics; nil records them nowhere.
	ScanMetrics *scanningactivities.Metrics
	// Webhooks decides where webhook deliveries may go.
	Webhooks egress.Targets
	// Memory bounds the answer files, scan files and page images the
	// worker holds at once (decision 0174); the regions of one process
	// share it. nil shares membudget.Worker. Its metrics go to Registry.
	Memory *membudget.Budget
}

// maxProviderCalls bounds a worker's calls in flight to its region's AI
// provider, and its activity tasks.
const maxProviderCalls = 32

// NewWorker returns a worker that polls only cfg.Region's task queue and
// runs the grading, generation, regeneration and scanning workflows with
// that region's provider. An unknown region is an error.
func NewWorker(c client.Client, db *store.DB, cfg WorkerConfig) (worker.Worker, error) {
	queue, err := workflows.RegionTaskQueue(cfg.Region)
	if err != nil {
		return nil, err
	}
	// Pollers scale with the queue's load (the server tells the worker
	// when tasks wait), so a burst of submissions is not served by two
	// long polls at a time.
	autoscale := worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{})
	w := worker.New(c, queue, worker.Options{MaxConcurrentActivityExecutionSize: maxProviderCalls,
		WorkflowTaskPollerBehavior: autoscale, ActivityTaskPollerBehavior: autoscale})
	// First grading attempts run as local activities (decision 0123),
	// outside the activity slots: the provider itself is bounded.
	cfg.Provider = ai.Limit(cfg.Provider, maxProviderCalls)
	if cfg.Memory == nil {
		cfg.Memory = membudget.Worker
	}
	if cfg.OrgLabel == nil {
		cfg.OrgLabel = func(orgID string) string { return orgID }
	}
	if cfg.Registry != nil {
		if err := cfg.Memory.Register(cfg.Registry); err != nil {
			return nil, err
		}
	}
	w.RegisterWorkflow(gradingworkflow.GradeResult)
	w.RegisterWorkflow(generationworkflow.GenerateExam)
	content := newContent(db)
	grading := &gradingactivities.Activities{Results: content, Provider: cfg.Provider, Fetcher: cfg.Fetcher, Region: cfg.Region, Metrics: cfg.Metrics, Memory: cfg.Memory}
	grading.Register(w)
	gen := &generationactivities.Activities{Generations: generation.NewService(db, content), Provider: cfg.Provider, Region: cfg.Region,
		Metrics: generationactivities.NewMetrics(cfg.Registry, cfg.OrgLabel)}
	gen.Register(w)
	registerRegeneration(w, db, content, cfg)
	registerScanning(w, db, content, cfg)
	w.RegisterWorkflow(attemptworkflow.KeepDeadline)
	deadlines := &attemptactivities.Activities{Attempts: newDelivery(db, content, cfg.Registry, cfg.OrgLabel), Region: cfg.Region}
	deadlines.Register(w)
	w.RegisterWorkflow(webhookworkflow.DeliverEvent)
	hooks := &webhookactivities.Activities{Deliverer: webhooks.NewDeliverer(db, cfg.Webhooks, webhooks.NewMetrics(cfg.Registry)), Region: cfg.Region}
	hooks.Register(w)
	w.RegisterWorkflow(ltiscoreworkflow.PostScore)
	scores := &ltiscoreactivities.Activities{Region: cfg.Region, Scores: lti.NewService(db, lti.Config{Targets: cfg.Webhooks,
		Metrics: lti.NewMetrics(cfg.Registry, cfg.OrgLabel)})}
	scores.Register(w)
	return w, nil
}

// newDelivery returns the delivery service submitting attempts through
// content, recording their webhook events, with its metrics on reg (none
// without org).
func newDelivery(db *store.DB, content *assessment.Service, reg prometheus.Registerer, org func(string) string) *delivery.Service {
	d := delivery.NewService(db, content)
	d.Events = event.NewRecorder(api.WebhookData)
	if org != nil {
		d.Metrics = delivery.NewMetrics(reg, org)
	}
	return d
}

// newContent returns the assessment service that records webhook events,
// for the services built on it.
func newContent(db *store.DB) *assessment.Service {
	content := assessment.NewService(db)
	content.Events = event.NewRecorder(api.WebhookData)
	content.OnGraded = lti.QueueGraded
	return content
}

// NewDispatcher returns the outbox dispatcher, the one starter of the
// workflows of outbox.Kinds, with c; its metrics go to reg.
func NewDispatcher(c client.Client, db *store.DB, reg prometheus.Registerer, opts workflows.DispatchOptions) *workflows.Dispatcher {
	return newDispatcher(c, db, reg, opts, webhookworkflow.DefaultRetry)
}

// newDispatcher is NewDispatcher with the webhook retry schedule.
func newDispatcher(c client.Client, db *store.DB, reg prometheus.Registerer, opts workflows.DispatchOptions, retry webhookworkflow.Retry) *workflows.Dispatcher {
	return workflows.NewDispatcher(c, outbox.NewStore(db), routes(db, retry), reg, opts)
}

// routes are the workflow routes of outbox.Kinds, each with its feature's
// answers about its subjects: the one place a kind is wired (decision
// 0198).
func routes(db *store.DB, retry webhookworkflow.Retry) map[outbox.Kind]workflows.Route {
	content := newContent(db)
	gen := generation.NewService(db, content)
	scans := scanning.NewService(db, content, tenancy.NewService(db), nil)
	attempts := newDelivery(db, content, nil, nil)
	tool := lti.NewService(db, lti.Config{})
	return map[outbox.Kind]workflows.Route{
		outbox.KindGrading:      gradingworkflow.Route(workflows.Subjects{Unfinished: content.UnfinishedGrading, Abandon: content.FailGrading}),
		outbox.KindGeneration:   generationworkflow.Route(workflows.Subjects{Unfinished: gen.Unfinished, Abandon: gen.Abandon}),
		outbox.KindRegeneration: regenerationRoute(db, content),
		outbox.KindScanning:     scanningworkflow.Route(workflows.Subjects{Unfinished: scans.Unfinished, Abandon: scans.Fail}),
		outbox.KindWebhook:      webhookworkflow.Route(retry, workflows.Subjects{Unfinished: webhooks.Unfinished(db), Abandon: webhooks.Abandon(db)}),
		outbox.KindAttempt:      attemptworkflow.Route(workflows.Subjects{Unfinished: attempts.Unfinished, Abandon: closeIfDue(attempts)}),
		outbox.KindLTIScore:     ltiscoreworkflow.Route(workflows.Subjects{Unfinished: tool.UnfinishedScores, Abandon: tool.GiveUpScore}),
	}
}

// closeIfDue closes an attempt whose deadline workflow cannot run, if its
// time is up: saves after it are refused by the API whatever happens.
func closeIfDue(d *delivery.Service) func(ctx context.Context, attemptID, reason string) error {
	return func(ctx context.Context, attemptID, _ string) error {
		org, _ := store.OrgID(ctx)
		_, err := d.Close(ctx, org, attemptID)
		return err
	}
}
