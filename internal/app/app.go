// Package app wires the domain services, the API and the HTTP surface into
// one handler. The command line and the end-to-end tests both build the
// server through it, so tests exercise exactly what runs.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"

	"github.com/assessd/assessd/api"
	"github.com/assessd/assessd/api/openapi"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/classes"
	"github.com/assessd/assessd/internal/delivery"
	"github.com/assessd/assessd/internal/embedflow"
	"github.com/assessd/assessd/internal/generation"
	"github.com/assessd/assessd/internal/idempotency"
	"github.com/assessd/assessd/internal/identity"
	"github.com/assessd/assessd/internal/identity/account"
	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/identity/serviceaccounts"
	"github.com/assessd/assessd/internal/lti"
	ltipages "github.com/assessd/assessd/internal/lti/pages"
	"github.com/assessd/assessd/internal/ltiflow"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/clientaddr"
	"github.com/assessd/assessd/internal/platform/egress"
	"github.com/assessd/assessd/internal/platform/failurelog"
	"github.com/assessd/assessd/internal/platform/ratelimit"
	"github.com/assessd/assessd/internal/regeneration"
	"github.com/assessd/assessd/internal/scanning"
	"github.com/assessd/assessd/internal/server"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/transfer"
	"github.com/assessd/assessd/internal/web"
	"github.com/assessd/assessd/internal/webhooks"
	"github.com/assessd/assessd/internal/webhooks/event"
	webhookpages "github.com/assessd/assessd/internal/webhooks/pages"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/workflows"
	webhookworkflow "github.com/assessd/assessd/workflows/webhooks"
)

// Config is what the application needs beyond its database.
type Config struct {
	// BaseURL is the public URL and OIDC issuer.
	BaseURL string
	Logger  *slog.Logger
	// Now is the clock of token lifetimes; nil means time.Now.
	Now func() time.Time
	// Temporal runs the grading and generation workflows; nil leaves them
	// waiting in the outbox (tests of everything else).
	Temporal client.Client
	// Dispatch tunes the outbox dispatcher; zero values take the defaults.
	Dispatch workflows.DispatchOptions
	// Redis holds the embed sessions and shares rate limits across
	// instances.
	Redis *redis.Client
	// TrustedProxies finds clients behind the load balancer; nil trusts no
	// proxy (ASSESSD_TRUSTED_PROXIES).
	TrustedProxies *clientaddr.Resolver
	// RateLimitPrefix namespaces the rate limits' Redis keys; "" means
	// "assessd:rl:". Tests give each server its own.
	RateLimitPrefix string
	// RequestsPerMinute is the request quota of a plan; nil means
	// tenancy.RequestsPerMinute. Benchmarks raise it. An organization's
	// override (assessd admin org update) takes its place.
	RequestsPerMinute func(plan string) int
	// LTIPerMinute bounds one client address's LTI logins, and its
	// launches, per minute; 0 means ltiflow.DefaultPerMinute. Benchmarks,
	// all on loopback, raise it.
	LTIPerMinute int
	// QuotaPolicyTTL is how long an instance keeps an organization's
	// quota before reading it again; 0 means ratelimit.PolicyTTL (a
	// minute). Tests shorten it.
	QuotaPolicyTTL time.Duration
	// MediaCDN are the URL prefixes of the media CDN (ASSESSD_MEDIA_CDN):
	// answer-sheet scans may name files there only.
	MediaCDN []string
	// MediaMaxUploadBytes bounds an uploaded answer file; 0 means
	// media.DefaultMaxUploadBytes.
	MediaMaxUploadBytes int64
	// Webhooks decides which URLs webhook endpoints and LTI platform
	// registrations may have (ASSESSD_WEBHOOK_ALLOW_PRIVATE lifts the
	// address rule for both).
	Webhooks egress.Targets
	// WebhookRetry is the webhook delivery schedule; zero means
	// webhookworkflow.DefaultRetry (tests shorten it).
	WebhookRetry webhookworkflow.Retry
}

// App is the wired server.
type App struct {
	Handler http.Handler
	Tenancy *tenancy.Service
	// Assessment holds folders, exams, questions, question types and results.
	Assessment *assessment.Service
	Identity   *identity.Provider
	// Clients holds the OAuth clients and the clients organizations
	// allowed extra scopes; ServiceAccounts the service accounts.
	Clients         *clients.Service
	ServiceAccounts *serviceaccounts.Service
	// Media holds the uploaded answer files.
	Media *media.Files
	// Classes holds rosters; Delivery assignments and attempts.
	Classes  *classes.Service
	Delivery *delivery.Service
	// LTI is the LTI 1.3 tool: platform registrations and launches.
	LTI      *lti.Service
	Metrics  *observability.Metrics
	limiter  *ratelimit.Limiter
	webhooks *webhooks.Service
	// idempotencyKeys remembers the responses of requests sent with an
	// Idempotency-Key (decision 0178).
	idempotencyKeys *idempotency.Keys
	now             func() time.Time
	// dispatcher starts the outbox's workflows; nil without Temporal.
	dispatcher *workflows.Dispatcher
}

// Close releases what the App holds beyond its database: it writes the API
// key uses not yet recorded (call it after the server has drained) and
// closes the rate limiter's Redis connections.
func (a *App) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(a.Tenancy.FlushKeyUses(ctx), a.limiter.Close())
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

// Intervals of the housekeeping Start runs.
const (
	keyUseFlushInterval = 5 * time.Second
	expiredSweepEvery   = 10 * time.Minute
)

// Start runs the application's background work until ctx ends: the watch
// that keeps cached credentials consistent across instances, the one that
// wakes reads waiting for a result's grading (decision 0135), the outbox
// dispatcher that starts workflows, and the housekeeping kept off the
// request path (decision 0081): writing API keys' last-used times and
// deleting long-expired OAuth auth requests and tokens (decision 0152),
// webhook events past their retention (decision 0153), uploads no
// answer named (decision 0155) and idempotency keys past their 24 hours
// (decision 0178).
func (a *App) Start(ctx context.Context) {
	go a.Tenancy.WatchCredentialChanges(ctx)
	go a.Assessment.WatchFinishedResults(ctx)
	if a.dispatcher != nil {
		go a.dispatcher.Run(ctx)
	}
	go every(ctx, keyUseFlushInterval, "API key use flush", a.Tenancy.FlushKeyUses)
	go every(ctx, expiredSweepEvery, "expired OAuth sweep", a.Identity.SweepExpired)
	go every(ctx, expiredSweepEvery, "webhook event sweep", func(ctx context.Context) error {
		return a.webhooks.SweepEvents(ctx, a.now())
	})
	go every(ctx, expiredSweepEvery, "unattached upload sweep", func(ctx context.Context) error {
		return a.Media.SweepUnattached(ctx, a.now())
	})
	go every(ctx, expiredSweepEvery, "idempotency key sweep", a.idempotencyKeys.Sweep)
}

// every runs fn every interval until ctx ends, logging its failures once
// per outage (failurelog).
func every(ctx context.Context, interval time.Duration, what string, fn func(context.Context) error) {
	failures := failurelog.New(what, slog.LevelWarn)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := fn(ctx); ctx.Err() == nil {
				failures.Record(ctx, err)
			}
		}
	}
}

// New wires an App on db.
func New(ctx context.Context, db *store.DB, cfg Config) (*App, error) {
	metrics := observability.NewMetrics()
	metrics.RegisterPool(db)
	metrics.RegisterOrgInfo(OrgInfoLookup(db))
	ten := tenancy.NewService(db)
	ten.UserEvents = event.NewRecorder(api.WebhookData).Users(db)
	prefix, perMinute := cfg.RateLimitPrefix, cfg.RequestsPerMinute
	if prefix == "" {
		prefix = "assessd:rl:"
	}
	if perMinute == nil {
		perMinute = tenancy.RequestsPerMinute
	}
	metrics.RegisterCredentialListener(ten.CredentialListenerUp)
	if cfg.Redis != nil {
		metrics.RegisterRedis(func(ctx context.Context) error { return cfg.Redis.Ping(ctx).Err() })
	}
	limiter := ratelimit.New(ratelimit.Options{Redis: cfg.Redis, Prefix: prefix, Registerer: metrics.Registry,
		OrgLabel: metrics.Org, Logger: cfg.Logger})
	hooks := webhooks.NewService(db, cfg.Webhooks)
	rosters := classes.NewService(db)
	tool := lti.NewService(db, lti.Config{BaseURL: cfg.BaseURL, Targets: cfg.Webhooks, Redis: cfg.Redis, Users: ten, Classes: rosters,
		Metrics: lti.NewMetrics(metrics.Registry, metrics.Org), Now: cfg.Now})
	accounts := serviceaccounts.New(db)
	idp, err := identity.New(ctx, identity.Config{Issuer: cfg.BaseURL, Now: cfg.Now, Registerer: metrics.Registry, Logger: cfg.Logger,
		Limiter: limiter, ServiceAccounts: accounts}, db, ten)
	if err != nil {
		return nil, errors.Join(err, limiter.Close())
	}
	oauthClients := clients.New(db, idp)
	content := newContent(db)
	gen := generation.NewService(db, content)
	var dispatcher *workflows.Dispatcher
	if cfg.Temporal != nil {
		retry := cfg.WebhookRetry
		if retry == (webhookworkflow.Retry{}) {
			retry = webhookworkflow.DefaultRetry
		}
		dispatcher = newDispatcher(cfg.Temporal, db, metrics.Registry, cfg.Dispatch, retry)
	}
	regen := regeneration.NewService(db, content)
	files := media.NewFiles(db, cfg.BaseURL, cfg.MediaMaxUploadBytes)
	embeds := embedflow.NewService(embedflow.NewStore(cfg.Redis), ten, content, gen, regen, cfg.BaseURL, metrics.Registry, metrics.Org)
	embeds.Files = files
	// The files uploaded to assessd are on the media CDN wherever the
	// configuration names it (decision 0121).
	cdn := append([]string{media.PrefixOf(cfg.BaseURL)}, cfg.MediaCDN...)
	scans := scanning.NewService(db, content, ten, media.NewFetcher(cdn, media.Options{}).OnCDN)
	transfers := transfer.NewService(db, content)
	attempts := newDelivery(db, content, metrics.Registry, metrics.Org)
	embeds.Attempts = attempts
	apiHandler, err := api.NewHandler(api.Services{Tenancy: ten, Assessment: content, Generation: gen, Embed: embeds, AllowedClients: oauthClients,
		Regeneration: regen, Scans: scans, Transfers: transfers, Webhooks: hooks, Delivery: attempts, Classes: rosters, LTI: tool})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("api: %w", err), limiter.Close())
	}
	keys := idempotency.New(db, cfg.Now, metrics.Registry, metrics.Org)
	docs := web.Docs()
	pages := http.NewServeMux()
	idp.Routes(pages)
	account.New(idp, ten, oauthClients).Routes(pages)
	oauthClients.Routes(pages)
	webhookpages.New(idp, hooks).Routes(pages)
	ltipages.New(idp, tool).Routes(pages)
	embeds.Routes(pages)
	embeds.ExportRoutes(pages, transfers)
	ltiflow.New(tool, embeds, attempts, content, limiter, cfg.LTIPerMinute).Routes(pages)
	h := server.New(server.Config{
		Logger:  cfg.Logger,
		Metrics: metrics,
		API:     apiHandler,
		Credentials: []server.Credential{
			{Match: func(t string) bool { return strings.HasPrefix(t, "ak_") }, Authenticate: ten.AuthenticateAPIKey, Subject: tenancy.APIKeyID},
			{Match: identity.IsJWT, Authenticate: idp.AuthenticateJWT, Subject: identity.JWTSubject},
			{Match: func(string) bool { return true }, Authenticate: idp.AuthenticateAccessToken, Subject: idp.AccessTokenSubject},
		},
		ClientAddrs: cfg.TrustedProxies,
		Limiter:     limiter,
		Idempotent:  keys.Middleware,
		// While an organization's plan cannot be read, the most generous
		// plan's quota applies: the outage must not turn into 429s.
		Quotas: limiter.Quotas(planQuota(ten, perMinute),
			ratelimit.PerWindow(tenancy.PlanEnterprise, perMinute(tenancy.PlanEnterprise), time.Minute), cfg.QuotaPolicyTTL),
		StudentQuotas: limiter.Quotas(func(context.Context, string) (ratelimit.Limit, error) { return studentQuota, nil }, studentQuota, 0),
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
			"/lti/login":                        pages,
			"POST /lti/launch":                  pages,
			"GET /lti/jwks":                     pages,
			"/lti/deep-linking/{id}":            pages,
			"GET /media/{id}/{name}":            api.MediaFiles(files),
		},
		// The OAuth endpoints refuse an oversized form in RFC 6749's shape.
		FormEndpoints: map[string]http.Handler{
			"POST /oauth/token":      idp.Handler(),
			"POST /oauth/revoke":     idp.Handler(),
			"POST /oauth/introspect": idp.Handler(),
		},
		// A file answer bounds its request by the upload limit itself.
		PageUploads: map[string]http.Handler{"POST /embed/{id}/files/{question}": pages},
		Uploads:     map[string]http.Handler{scanUploadRoute: api.ScanUploads(scans)},
		Streams: map[string]http.Handler{
			"POST /media":                api.MediaUploads(files),
			"GET /exams/{examId}/export": api.ExamExport(transfers),
			"POST /exam-imports":         api.ExamImports(transfers),
		},
		Ready:   readiness(db, cfg.Temporal),
		OpenAPI: openapi.Document,
		Route:   api.RouteOf(),
		FieldOf: api.FieldOf,
	})
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &App{Handler: h, Tenancy: ten, Assessment: content, Identity: idp, Clients: oauthClients, ServiceAccounts: accounts, Media: files, Classes: rosters, Delivery: attempts, LTI: tool,
		Metrics: metrics, limiter: limiter,
		webhooks: hooks, idempotencyKeys: keys, now: now, dispatcher: dispatcher}, nil
}

// studentQuota is each student's own request quota.
var studentQuota = ratelimit.PerWindow("student", tenancy.StudentRequestsPerMinute, time.Minute)

// planQuota returns each organization's request quota: the operator's
// override or else its plan's requests per minute, under a policy named
// after the plan either way (the RateLimit-Policy field shows the number).
func planQuota(ten *tenancy.Service, perMinute func(plan string) int) func(context.Context, string) (ratelimit.Limit, error) {
	return func(ctx context.Context, orgID string) (ratelimit.Limit, error) {
		org, err := ten.Org(tenancy.WithCaller(ctx, tenancy.SystemCaller(orgID)))
		if err != nil {
			return ratelimit.Limit{}, err
		}
		n, _ := org.Quota(perMinute)
		return ratelimit.PerWindow(org.Plan, n, time.Minute), nil
	}
}
