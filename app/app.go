// Package app wires the domain services, the API and the HTTP surface into
// one handler. The command line and the end-to-end tests both build the
// server through it, so tests exercise exactly what runs.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/assessd/assessd/api"
	"github.com/assessd/assessd/api/openapi"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/server"
	"github.com/assessd/assessd/store"
	"github.com/assessd/assessd/tenancy"
)

// App is the wired server.
type App struct {
	Handler http.Handler
	Tenancy *tenancy.Service
	Metrics *observability.Metrics
}

// New wires an App on db.
func New(db *store.DB, log *slog.Logger) (*App, error) {
	metrics := observability.NewMetrics()
	metrics.RegisterPool(db)
	ten := tenancy.NewService(db)
	apiHandler, err := api.NewHandler(api.Services{Tenancy: ten})
	if err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	h := server.New(server.Config{
		Logger:      log,
		Metrics:     metrics,
		API:         apiHandler,
		Credentials: []server.Credential{{Prefix: "ak_", Authenticate: ten.AuthenticateAPIKey}},
		Ready:       map[string]func(context.Context) error{"postgres": db.Ping},
		OpenAPI:     openapi.Document,
	})
	return &App{Handler: h, Tenancy: ten, Metrics: metrics}, nil
}
