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

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"

	"github.com/assessd/assessd/api"
	"github.com/assessd/assessd/api/openapi"
	"github.com/assessd/assessd/assessment"
	"github.com/assessd/assessd/embed"
	"github.com/assessd/assessd/generation"
	"github.com/assessd/assessd/identity"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/server"
	"github.com/assessd/assessd/store"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/web"
	"github.com/assessd/assessd/workflows"
)

// Config is what the application needs beyond its database.
type Config struct {
	// BaseURL is the public URL and OIDC issuer.
	BaseURL string
	Logger  *slog.Logger
	// Now is the clock of token lifetimes; nil means time.Now.
	Now func() time.Time
	// Temporal runs the grading workflows; nil leaves AI-graded answers
	// pending (tests of everything else).
	Temporal client.Client
	// Redis holds the embed sessions.
	Redis *redis.Client
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

// Grader starts grading workflows for the assessment service
// (assessment.Grader).
type Grader struct{ workflows.Starter }

// StartGrading starts the grading of a result on region's task queue.
func (g Grader) StartGrading(ctx context.Context, orgID, resultID, region string) error {
	return g.Starter.StartGrading(ctx, workflows.GradeResultInput{OrgID: orgID, ResultID: resultID, Region: region})
}

// readiness lists the dependencies /readyz checks.
// Redis is left out on purpose: without it only embed sessions stop (503),
// and the rest of the API must keep serving.
func readiness(db *store.DB, temporal client.Client) map[string]func(context.Context) error {
	checks := map[string]func(context.Context) error{"postgres": db.Ping}
	if temporal != nil {
		checks["temporal"] = func(ctx context.Context) error {
			_, err := temporal.CheckHealth(ctx, &client.CheckHealthRequest{})
			return err
		}
	}
	return checks
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
	metrics.RegisterOrgInfo(OrgInfoLookup(db))
	ten := tenancy.NewService(db)
	idp, err := identity.New(ctx, identity.Config{Issuer: cfg.BaseURL, Now: cfg.Now, Registerer: metrics.Registry, Logger: cfg.Logger}, db, ten)
	if err != nil {
		return nil, err
	}
	var starter generation.Starter
	var opts []assessment.Option
	if cfg.Temporal != nil {
		s := workflows.Starter{Client: cfg.Temporal}
		starter = s
		opts = append(opts, assessment.WithGrader(Grader{s}))
	}
	content := assessment.NewService(db, opts...)
	gen := generation.NewService(db, content, starter)
	embeds := embed.NewService(embed.NewStore(cfg.Redis), ten, content, gen, cfg.BaseURL, metrics.Registry, metrics.Org)
	apiHandler, err := api.NewHandler(api.Services{Tenancy: ten, Assessment: content, Generation: gen, Embed: embeds})
	if err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	docs := web.Docs()
	pages := http.NewServeMux()
	idp.Routes(pages)
	embeds.Routes(pages)
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
			"/embed/":                           pages,
		},
		Ready:   readiness(db, cfg.Temporal),
		OpenAPI: openapi.Document,
		Route:   api.RouteOf(),
	})
	return &App{Handler: h, Tenancy: ten, Assessment: content, Identity: idp, Metrics: metrics}, nil
}
