package app

import (
	"go.temporal.io/sdk/worker"

	regenerationactivities "github.com/assessd/assessd/activities/regeneration"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/regeneration"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/workflows"
	regenerationworkflow "github.com/assessd/assessd/workflows/regeneration"
)

// registerRegeneration registers the question regeneration workflow and
// its activities, with cfg.Region's provider, on w.
func registerRegeneration(w worker.Worker, db *store.DB, content *assessment.Service, cfg WorkerConfig) {
	w.RegisterWorkflow(regenerationworkflow.RegenerateQuestion)
	acts := &regenerationactivities.Activities{Regenerations: regeneration.NewService(db, content), Provider: cfg.Provider,
		Region: cfg.Region, Metrics: regenerationactivities.NewMetrics(cfg.Registry, cfg.OrgLabel)}
	acts.Register(w)
}

// regenerationRoute is the outbox route of regenerations.
func regenerationRoute(db *store.DB, content *assessment.Service) workflows.Route {
	regenerations := regeneration.NewService(db, content)
	return regenerationworkflow.Route(workflows.Subjects{Unfinished: regenerations.Unfinished, Abandon: regenerations.Abandon})
}
