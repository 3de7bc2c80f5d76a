// Package app wires the domain services, the API and the HTTP surface into
// one handler. The command line and the end-to-end tests both build the
// server through it, so tests exercise exactly what runs.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/assessd/assessd/api"
	"github.com/assessd/assessd/api/openapi"
	"github.com/assessd/assessd/assessment"
	"github.com/assessd/assessd/identity"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/server"
	"github.com/assessd/assessd/store"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/web"
)

// Config is what the application needs beyond its database.
type Config struct {
	// BaseURL is the public URL and OIDC issuer.
	BaseURL string
	Logger  *slog.Logger
	// Now is the clock of token lifetimes; nil means time.Now.
	Now func() time.Time
}

// App is the wired server.
type App struct {
	Handler http.Handler
	Tenancy *tenancy.Service
	// Assessment holds folders, exams, questions, question types and results.
	Assessment *assessment.Service
	Identity   *identity.Provider
	Metrics    *observability.Metrics
}

// Start runs the application's background work until ctx ends: the watch
// that keeps cached credentials consistent across instances.
func (a *App) Start(ctx context.Context) {
	go a.Tenancy.WatchCredentialChanges(ctx)
}

// New wires an App on db.
func New(ctx context.Context, db *store.DB, cfg Config) (*App, error) {
	metrics := observability.NewMetrics()
	metrics.RegisterPool(db)
	ten := tenancy.NewService(db)
	idp, err := identity.New(ctx, identity.Config{Issuer: cfg.BaseURL, Now: cfg.Now, Registerer: metrics.Registry, Logger: cfg.Logger}, db, ten)
	if err != nil {
		return nil, err
	}
	content := assessment.NewService(db)
	apiHandler, err := api.NewHandler(api.Services{Tenancy: ten, Assessment: content})
	if err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	docs := web.Docs()
	pages := http.NewServeMux()
	idp.Routes(pages)
	h := server.New(server.Config{
		Logger:  cfg.Logger,
		Metrics: metrics,
		API:     apiHandler,
		Credentials: []server.Credential{
			{Match: func(t string) bool { return strings.HasPrefix(t, "ak_") }, Authenticate: ten.AuthenticateAPIKey},
			{Match: identity.IsJWT, Authenticate: idp.AuthenticateJWT},
			{Match: func(string) bool { return true }, Authenticate: idp.AuthenticateAccessToken},
		},
		Pages: map[string]http.Handler{
			"/.well-known/openid-configuration": idp.Handler(),
			"/oauth/":                           idp.Handler(),
			"/login":                            pages,
			"/consent":                          pages,
			"/logout":                           pages,
			"/account":                          pages,
			"/account/":                         pages,
			"/developer":                        pages,
			"/developer/":                       pages,
			"/docs":                             docs,
			"/docs/":                            docs,
		},
		Ready:   map[string]func(context.Context) error{"postgres": db.Ping},
		OpenAPI: openapi.Document,
	})
	return &App{Handler: h, Tenancy: ten, Assessment: content, Identity: idp, Metrics: metrics}, nil
}
