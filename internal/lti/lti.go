// Package lti makes assessd an LTI 1.3 tool (issue 57, decision 0200): an
// organization registers the learning platforms (LMSs) that launch it; a
// login initiation is answered with the OIDC authentication request the
// platform expects, its state and nonce kept server-side for one use; a
// launch's id_token is verified against the platform's published keys,
// fetched under the egress rules; and the launch's user and course context
// become (or are matched to) an assessd user and class. What the launch
// then opens, the embedded pages, is internal/ltiflow's.
package lti

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/assessd/assessd/internal/classes"
	"github.com/assessd/assessd/internal/platform/egress"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/platform/signingkeys"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// Users creates and changes the organization's users (tenancy.Service).
type Users interface {
	CreateUser(ctx context.Context, in tenancy.NewUser) (tenancy.User, error)
	UpdateUser(ctx context.Context, id string, p tenancy.UserPatch) (tenancy.User, error)
	ListUsers(ctx context.Context, f tenancy.UserFilter, p paging.Page) ([]tenancy.User, string, error)
}

// Classes creates classes and keeps their rosters (classes.Service).
type Classes interface {
	Get(ctx context.Context, id string) (classes.Class, error)
	Create(ctx context.Context, in classes.NewClass) (classes.Class, error)
	AddMember(ctx context.Context, classID string, in classes.NewMember) (classes.Member, error)
	RemoveMember(ctx context.Context, classID, userID string) error
}

var (
	_ Users   = (*tenancy.Service)(nil)
	_ Classes = (*classes.Service)(nil)
)

// Config is what a Service needs beyond its database.
type Config struct {
	// BaseURL is assessd's public URL: the tool's login, launch and key
	// URLs are under it.
	BaseURL string
	// Targets are the rules of the URLs the server fetches (the
	// platforms' keys and tokens) and of the browser-facing ones' scheme.
	Targets egress.Targets
	// Redis keeps the login states.
	Redis *redis.Client
	// Users and Classes are where launches put their users and contexts.
	Users   Users
	Classes Classes
	// Metrics counts launches; nil leaves them uncounted.
	Metrics *Metrics
	// Now is the clock of token times; nil means time.Now.
	Now func() time.Time
}

// Service is the LTI tool on PostgreSQL and Redis.
type Service struct {
	db      *store.DB
	baseURL string
	targets egress.Targets
	states  *states
	// client fetches from the platforms, under the egress rules: their
	// keys, tokens and services.
	client httpClient
	keys   *platformKeys
	tokens *accessTokens
	// ToolKeys are the tool's own signing keys, published at /lti/jwks.
	ToolKeys *signingkeys.Ring
	users    Users
	classes  Classes
	metrics  *Metrics
	now      func() time.Time
}

// NewService returns the LTI tool on db.
func NewService(db *store.DB, cfg Config) *Service {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	m := cfg.Metrics
	if m == nil {
		m = NewMetrics(nil, func(string) string { return "" })
	}
	client := cfg.Targets.Client()
	return &Service{db: db, baseURL: cfg.BaseURL, targets: cfg.Targets, states: &states{rdb: cfg.Redis}, client: client,
		keys: newPlatformKeys(client, now), tokens: newAccessTokens(client, now), ToolKeys: signingkeys.New(db, signingkeys.PurposeLTI, now),
		users: cfg.Users, classes: cfg.Classes, metrics: m, now: now}
}

// Tool is the configuration an LMS administrator enters on the platform's
// side, the same for every registration: the URLs of API.md's LTI
// section.
type Tool struct {
	// LoginURL answers the platform's third-party login initiation.
	LoginURL string
	// LaunchURL takes the platform's authentication responses, the
	// launches: the redirect URI and target link URI.
	LaunchURL string
	// DeepLinkingURL is where the platform sends deep-linking requests
	// (the same endpoint: the message type tells them apart).
	DeepLinkingURL string
	// JWKSURL publishes the tool's public keys.
	JWKSURL string
}

// Tool returns the tool's configuration.
func (s *Service) Tool() Tool {
	return Tool{LoginURL: s.baseURL + "/lti/login", LaunchURL: s.baseURL + "/lti/launch",
		DeepLinkingURL: s.baseURL + "/lti/launch", JWKSURL: s.baseURL + "/lti/jwks"}
}

// checkBrowserURL checks a URL the browser is sent to or that names the
// platform (its issuer): absolute, https (http only where the egress rules
// allow private targets: development and tests), without credentials or
// fragment, at most egress.MaxURLLength long. It is not fetched, so its
// address is not checked.
func (s *Service) checkBrowserURL(field, raw string) error {
	if raw == "" {
		return errs.Invalid(field, "is required")
	}
	if len(raw) > egress.MaxURLLength {
		return errs.Invalid(field, "must be at most %d characters", egress.MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return errs.Invalid(field, "must be an absolute URL")
	}
	if u.Scheme != "https" && (u.Scheme != "http" || !s.targets.AllowPrivate) {
		return errs.Invalid(field, "must use https")
	}
	if u.User != nil || u.Fragment != "" {
		return errs.Invalid(field, "must not carry credentials or a fragment")
	}
	return nil
}

// origin returns the scheme://host of raw, "" when it has none.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// frameable reports whether origin o may frame the tool's pages: https,
// or http on loopback (development), the rule of embed sessions' allowed
// origins.
func frameable(o string) bool {
	u, err := url.Parse(o)
	if err != nil {
		return false
	}
	return u.Scheme == "https" || (u.Scheme == "http" && (u.Hostname() == "localhost" || u.Hostname() == "127.0.0.1"))
}

// httpClient is what the tool fetches from platforms with.
type httpClient interface {
	Do(*http.Request) (*http.Response, error)
}
