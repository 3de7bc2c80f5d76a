// Package identity is assessd's OAuth 2.0 / OpenID Connect provider, built
// on zitadel/oidc's op package with PostgreSQL storage: the authorization
// code flow with PKCE, refresh rotation, revocation, introspection, the
// JWT bearer grant of service accounts, browser sessions, the login and
// consent pages, and the callers its tokens stand for. Registering clients
// (identity/clients), managing service accounts (identity/serviceaccounts)
// and the account pages (identity/account) build on it.
package identity

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	httphelper "github.com/zitadel/oidc/v3/pkg/http"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"

	"github.com/assessd/assessd/internal/platform/clientaddr"
	"github.com/assessd/assessd/internal/platform/ratelimit"
	"github.com/assessd/assessd/internal/platform/signingkeys"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// Config configures the provider.
type Config struct {
	// Issuer is the public base URL (ASSESSD_BASE_URL).
	Issuer string
	// Now is the clock; nil means time.Now. Tests inject one to expire
	// tokens.
	Now func() time.Time
	// Registerer receives the provider's metrics.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// Limiter holds the failure limits of sign-ins and token requests; nil
	// keeps them per process.
	Limiter *ratelimit.Limiter
	// ServiceAccounts are the callers of the JWT bearer grant.
	ServiceAccounts ServiceAccounts
}

// Provider is the OpenID provider and everything around it.
type Provider struct {
	cfg     Config
	db      *store.DB
	tenancy *tenancy.Service
	storage *storage
	op      *op.Provider
	server  *server
	// handler is built once, by Handler.
	handlerOnce sync.Once
	handler     http.Handler
	metrics     *metrics
	now         func() time.Time
	verifier    *op.AccessTokenVerifier
	// loginFailures and tokenFailures limit failed sign-ins (per client
	// address and email) and failed token-endpoint requests (per client
	// address and OAuth client).
	loginFailures *ratelimit.Failures
	tokenFailures *ratelimit.Failures
}

// Endpoint paths (API.md).
var endpoints = op.Endpoints{
	Authorization: op.NewEndpoint("/oauth/authorize"),
	Token:         op.NewEndpoint("/oauth/token"),
	Introspection: op.NewEndpoint("/oauth/introspect"),
	Userinfo:      op.NewEndpoint("/oauth/userinfo"),
	Revocation:    op.NewEndpoint("/oauth/revoke"),
	EndSession:    op.NewEndpoint("/oauth/logout"),
	JwksURI:       op.NewEndpoint("/oauth/keys"),
}

// New builds the provider on db.
func New(ctx context.Context, cfg Config, db *store.DB, ten *tenancy.Service) (*Provider, error) {
	if cfg.ServiceAccounts == nil {
		return nil, errors.New("identity: no service accounts configured")
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	key, err := cryptoKey(ctx, db)
	if err != nil {
		return nil, err
	}
	st := &storage{db: db, users: ten, accounts: cfg.ServiceAccounts, keys: signingKeys{signingkeys.New(db, signingkeys.PurposeOIDC, now)}, now: now}
	scopes := make([]string, len(tenancy.AllScopes))
	for i, s := range tenancy.AllScopes {
		scopes[i] = string(s)
	}
	opts := []op.Option{
		op.WithCustomAuthEndpoint(endpoints.Authorization),
		op.WithCustomTokenEndpoint(endpoints.Token),
		op.WithCustomIntrospectionEndpoint(endpoints.Introspection),
		op.WithCustomUserinfoEndpoint(endpoints.Userinfo),
		op.WithCustomRevocationEndpoint(endpoints.Revocation),
		op.WithCustomEndSessionEndpoint(endpoints.EndSession),
		op.WithCustomKeysEndpoint(endpoints.JwksURI),
	}
	if strings.HasPrefix(cfg.Issuer, "http://") {
		opts = append(opts, op.WithAllowInsecure())
	}
	if cfg.Logger != nil {
		opts = append(opts, op.WithLogger(cfg.Logger))
	}
	provider, err := op.NewProvider(&op.Config{
		CryptoKey:                key,
		CodeMethodS256:           true,
		AuthMethodPost:           true,
		GrantTypeRefreshToken:    true,
		SupportedUILocales:       []language.Tag{language.English},
		SupportedScopes:          scopes,
		SupportedClaims:          []string{"sub", "aud", "exp", "iat", "iss", "auth_time", "nonce", "name", "email", "email_verified", "org_id", "role"},
		DefaultLogoutRedirectURI: "/login",
	}, st, op.StaticIssuer(cfg.Issuer), opts...)
	if err != nil {
		return nil, fmt.Errorf("identity: %w", err)
	}
	limiter := cfg.Limiter
	if limiter == nil {
		limiter = ratelimit.New(ratelimit.Options{})
	}
	p := &Provider{cfg: cfg, db: db, tenancy: ten, storage: st, op: provider, now: now, metrics: newMetrics(cfg.Registerer),
		loginFailures: limiter.Failures("login_failures", 10, 5), tokenFailures: limiter.Failures("oauth_failures", 30, 30)}
	p.verifier = op.NewAccessTokenVerifier(cfg.Issuer, &op.OpenIDKeySet{Storage: st})
	p.server = &server{LegacyServer: op.NewLegacyServer(provider, endpoints), p: p}
	return p, nil
}

// limitTokenFailures slows down guessing at the token, revocation and
// introspection endpoints: an address whose requests for one OAuth client
// (or service account) keep failing (30, refilled at 30 a minute) gets 429
// until its bucket refills.
func (p *Provider) limitTokenFailures(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/oauth/") {
			next.ServeHTTP(w, r)
			return
		}
		addr, client := clientaddr.From(r), requestingClient(r)
		if blocked, retry := p.tokenFailures.Blocked(r.Context(), addr, client); blocked {
			w.Header().Set("Retry-After", strconv.Itoa(ratelimit.RetryAfterSeconds(retry)))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":"slow_down","error_description":"too many failed requests; retry later"}`))
			return
		}
		rec := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == http.StatusBadRequest || rec.status == http.StatusUnauthorized {
			p.tokenFailures.Fail(r.Context(), addr, client)
		}
	})
}

// requestingClient names the OAuth client a token-endpoint request claims
// to come from: its client_id (HTTP Basic or form), or for the JWT bearer
// grant the assertion's subject, the service account. It reads the form,
// which the endpoint would parse anyway.
func requestingClient(r *http.Request) string {
	if id, _, ok := r.BasicAuth(); ok {
		return id
	}
	if id := r.PostFormValue("client_id"); id != "" {
		return id
	}
	return JWTSubject(r.PostFormValue("assertion"))
}

// statusWriter remembers the status of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Handler serves the provider's endpoints (discovery and /oauth/*). It is
// built on first use: the library logs each route it registers, which
// operator commands, which never serve, should not print.
func (p *Provider) Handler() http.Handler {
	p.handlerOnce.Do(func() {
		p.handler = noStore(bearerChallenge(formErrors(p.limitTokenFailures(op.RegisterLegacyServer(p.server, callbackWithID(op.AuthorizeCallbackHandler(p.op)))))))
	})
	return p.handler
}

// formEndpoints are the endpoints whose every error is an RFC 6749 error
// response (section 5.2, which RFC 7009 and RFC 7662 take over): JSON,
// and here 4xx.
var formEndpoints = []string{endpoints.Token.Relative(), endpoints.Revocation.Relative(), endpoints.Introspection.Relative()}

// formErrors answers a POST to a form endpoint whose form cannot be read in
// the RFC 6749 shape of the endpoint's other errors: 413 invalid_request
// for a body beyond the server's bound (server.Config.FormEndpoints), 400
// invalid_request, with the library's description, for one that cannot be
// read or parsed. limitTokenFailures reads the form before the library
// does, and a form that failed to parse looks empty to the library's own
// ParseForm ("grant_type missing"), so the failure is answered here.
func formErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !slices.Contains(formEndpoints, r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		if err := r.ParseForm(); err != nil {
			if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
				httphelper.MarshalJSONWithStatus(w, oidc.ErrInvalidRequest().WithDescription("request body exceeds %d bytes", tooLarge.Limit),
					http.StatusRequestEntityTooLarge)
				return
			}
			httphelper.MarshalJSONWithStatus(w, oidc.ErrInvalidRequest().WithDescription("error parsing form"), http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearerChallenge adds the challenge RFC 6750 requires of a 401 to the
// userinfo endpoint's, which the library writes without one; the API's
// 401s carry the same realm. A request that sent a token is told it is
// invalid_token; one that sent none gets the bare challenge (section 3.1).
func bearerChallenge(next http.Handler) http.Handler {
	userinfo := endpoints.Userinfo.Relative()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == userinfo {
			challenge := `Bearer realm="assessd"`
			if r.Header.Get("Authorization") != "" || r.FormValue("access_token") != "" {
				challenge += `, error="invalid_token"`
			}
			w = &challengeWriter{ResponseWriter: w, challenge: challenge}
		}
		next.ServeHTTP(w, r)
	})
}

// challengeWriter sets WWW-Authenticate on a 401 that has none.
type challengeWriter struct {
	http.ResponseWriter
	challenge string
}

func (c *challengeWriter) WriteHeader(code int) {
	if code == http.StatusUnauthorized && c.Header().Get("WWW-Authenticate") == "" {
		c.Header().Set("WWW-Authenticate", c.challenge)
	}
	c.ResponseWriter.WriteHeader(code)
}

// callbackWithID answers an authorization callback that names no request
// itself, as the library would, but without logging the caller's mistake
// as a server fault.
func callbackWithID(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("id") == "" {
			http.Error(w, "auth request callback is missing id", http.StatusBadRequest)
			return
		}
		next(w, r)
	}
}

// noStore forbids caching of every provider response (RFC 6749 5.1).
func noStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Pragma", "no-cache")
		next.ServeHTTP(w, r)
	})
}

// cryptoKey returns the provider's AES-256 key for access tokens and
// codes, creating it on first start; every instance shares it.
func cryptoKey(ctx context.Context, db *store.DB) ([32]byte, error) {
	var key [32]byte
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return key, err
	}
	q := db.Unscoped()
	if _, err := q.Exec(ctx, `INSERT INTO provider_secrets (name, value) VALUES ('token_crypto_key', $1) ON CONFLICT DO NOTHING`, fresh); err != nil {
		return key, fmt.Errorf("identity: store crypto key: %w", err)
	}
	var stored []byte
	if err := q.QueryRow(ctx, `SELECT value FROM provider_secrets WHERE name = 'token_crypto_key'`).Scan(&stored); err != nil {
		return key, fmt.Errorf("identity: load crypto key: %w", err)
	}
	if len(stored) != len(key) {
		return key, errors.New("identity: stored crypto key has the wrong size")
	}
	copy(key[:], stored)
	return key, nil
}

// authCallbackURL is where the login page sends the browser once the user
// approved an authorization request.
func (p *Provider) authCallbackURL(ctx context.Context, authRequestID string) string {
	return p.server.AuthCallbackURL()(op.ContextWithIssuer(ctx, p.cfg.Issuer), authRequestID)
}

// denyAuthRequest redirects the browser to the client with
// error=access_denied and the request's state.
func (p *Provider) denyAuthRequest(w http.ResponseWriter, r *http.Request, a *authRequest) {
	op.AuthRequestError(w, r.WithContext(op.ContextWithIssuer(r.Context(), p.cfg.Issuer)), a,
		oidc.ErrAccessDenied().WithDescription("the user denied the request"), p.op)
}
