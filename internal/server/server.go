// Package server assembles assessd's HTTP surface: the API behind its
// middleware chain (request id, recovery, logging and metrics, body limit,
// authentication) and the operational endpoints (health, readiness,
// metrics, OpenAPI).
package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/assessd/assessd/internal/platform/apihttp"
	"github.com/assessd/assessd/internal/platform/clientaddr"
	"github.com/assessd/assessd/internal/platform/ratelimit"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/tenancy"
)

// Authenticator resolves a bearer token to its caller, or fails with an
// errs.KindUnauthenticated error.
type Authenticator func(ctx context.Context, token string) (*tenancy.Caller, error)

// Credential pairs a kind of bearer token with the authenticator for it;
// the first credential whose Match accepts the token authenticates it.
type Credential struct {
	Match        func(token string) bool
	Authenticate Authenticator
	// Subject names the credential a token claims to be (an API key id, a
	// token id, a service account) without verifying it, so failure limits
	// apply per address and credential; nil means one bucket per address.
	Subject func(token string) string
}

// Config is everything the HTTP surface needs.
type Config struct {
	Logger      *slog.Logger
	Metrics     *observability.Metrics
	API         http.Handler
	Credentials []Credential
	// Pages are the non-API routes (OAuth endpoints, login, account and
	// embed pages), by ServeMux pattern; they authenticate themselves. A
	// page's request body is bounded by apihttp.MaxBodyBytes, as the API's is.
	Pages map[string]http.Handler
	// FormEndpoints are pages with an error shape of their own for a body
	// they cannot read (the OAuth token, revocation and introspection
	// endpoints: RFC 6749's JSON), by ServeMux pattern. Their bodies are
	// bounded like a page's, but one declared larger reaches the handler
	// unread, failing its first read with *http.MaxBytesError as one found
	// larger does at the bound (decision 0185).
	FormEndpoints map[string]http.Handler
	// PageUploads are pages that take a file, by ServeMux pattern: they
	// bound their request body themselves, above apihttp.MaxBodyBytes.
	PageUploads map[string]http.Handler
	// Uploads take multipart/form-data requests to an API route, by
	// ServeMux pattern: authenticated and counted against the quota like
	// the API, but reading their own body under their own limit (the API's
	// 1 MiB JSON limit does not apply). Other requests to the route take
	// the API's way.
	Uploads map[string]http.Handler
	// Streams are API routes that stream their request or response body
	// (exam export and import), by ServeMux pattern: authenticated and
	// counted against the quota like the API, reading their own body under
	// their own limit and answering errors in the API's shape themselves.
	Streams map[string]http.Handler
	// Ready holds the readiness checks by dependency name.
	Ready   map[string]func(context.Context) error
	OpenAPI []byte
	// ClientAddrs finds the client behind trusted proxies; nil trusts none.
	ClientAddrs *clientaddr.Resolver
	// Limiter holds the failure limits; nil keeps them per process.
	Limiter *ratelimit.Limiter
	// Quotas, when set, holds authenticated requests to their
	// organization's quota.
	Quotas *ratelimit.Quotas
	// StudentQuotas, when set, holds a student's requests to a quota of
	// their own instead of their organization's: ten thousand students
	// taking an exam at once do not use up the school's quota, and one
	// student's retries throttle only that student (decision 0192).
	StudentQuotas *ratelimit.Quotas
	// Idempotent, when set, wraps every authenticated API handler so that
	// a POST or PATCH sent with an Idempotency-Key runs once (decision
	// 0178).
	Idempotent func(http.Handler) http.Handler
	// Route names the API route template of a request the API never saw
	// (refused before it, e.g. unauthenticated), so its metrics and logs
	// carry the route rather than "unmatched"; "" when none matches.
	Route func(*http.Request) string
	// FieldOf names the request field of an API route's path or query
	// parameter, for the errors about values the transcoder cannot decode;
	// nil names the parameter as sent.
	FieldOf apihttp.FieldOf
}

// New returns the root handler.
func New(cfg Config) http.Handler {
	limiter := cfg.Limiter
	if limiter == nil {
		limiter = ratelimit.New(ratelimit.Options{})
	}
	clients := cfg.ClientAddrs
	if clients == nil {
		clients = &clientaddr.Resolver{}
	}
	auth := newAuthenticator(cfg, limiter)
	idempotent := cfg.Idempotent
	if idempotent == nil {
		idempotent = func(h http.Handler) http.Handler { return h }
	}
	// authenticated is the API behind authentication: the caller, whose
	// requests a key belongs to, is known before the key is looked up.
	authenticated := func(h http.Handler) http.Handler { return auth.middleware(idempotent(h)) }
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", named("GET /healthz", http.HandlerFunc(healthz)))
	mux.Handle("GET /readyz", named("GET /readyz", readyz(cfg.Ready)))
	mux.Handle("GET /metrics", named("GET /metrics", promhttp.HandlerFor(cfg.Metrics.Registry, promhttp.HandlerOpts{})))
	mux.Handle("GET /openapi.yaml", named("GET /openapi.yaml", openapi(cfg.OpenAPI)))
	for pattern, h := range cfg.Pages {
		mux.Handle(pattern, named(pattern, limitPageBody(h)))
	}
	for pattern, h := range cfg.FormEndpoints {
		mux.Handle(pattern, named(pattern, limitFormEndpointBody(h)))
	}
	for pattern, h := range cfg.PageUploads {
		mux.Handle(pattern, named(pattern, h))
	}
	apiChain := limitBody(authenticated(jsonErrors(cfg.FieldOf, cfg.API)))
	for pattern, h := range cfg.Uploads {
		mux.Handle(pattern, named(pattern, multipartOr(authenticated(h), apiChain)))
	}
	for pattern, h := range cfg.Streams {
		mux.Handle(pattern, named(pattern, authenticated(h)))
	}
	mux.Handle("/", apiChain)
	return withRequestInfo(clients.Middleware(recoverer(cfg.Logger, instrument(cfg.Logger, cfg.Metrics, cfg.Route, securityHeaders(cleanPathsOnly(mux))))))
}

// cleanPathsOnly answers a path ServeMux would clean ("/exams//questions",
// "/a/./b") with the API's 404: ServeMux would redirect it elsewhere, and a
// redirect to a different resource is no answer for a client that built
// the path from an empty id.
func cleanPathsOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		clean := path.Clean(p)
		if strings.HasSuffix(p, "/") && clean != "/" {
			clean += "/"
		}
		if p != "" && clean != p {
			apihttp.WriteErrorStatus(w, http.StatusNotFound, apihttp.NewError(connect.CodeNotFound, "NOT_FOUND", "no resource has this path", "", nil))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// named records the route template of a handler that is not an API route,
// in the API's "METHOD /path" format. When h is itself a ServeMux, the
// pattern it chose (ServeMux records it on the request) is the route, so
// "/embed/" becomes "GET /embed/{id}".
func named(pattern string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := observability.Info(r.Context())
		info.Route = RouteLabel(r.Method, pattern)
		h.ServeHTTP(w, r)
		if r.Pattern != "" {
			info.Route = RouteLabel(r.Method, r.Pattern)
		}
	})
}

// RouteLabel formats a ServeMux pattern as a route label: the pattern
// itself when it names a method ("GET /embed/{id}"), else prefixed with
// the request's method as a label ("POST /oauth/", "_OTHER /oauth/").
func RouteLabel(method, pattern string) string {
	if strings.HasPrefix(pattern, "/") {
		return methodLabel(method) + " " + pattern
	}
	return pattern
}

// multipartOr sends multipart/form-data requests to upload and all others
// to api.
func multipartOr(upload, api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && mt == "multipart/form-data" {
			upload.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz reports 200 when every dependency answers within two seconds,
// 503 with the failing checks otherwise.
func readyz(checks map[string]func(context.Context) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		results := map[string]string{}
		code := http.StatusOK
		for name, check := range checks {
			if err := check(ctx); err != nil {
				results[name] = "unavailable"
				code = http.StatusServiceUnavailable
				slog.WarnContext(ctx, "readiness check failed", "check", name, "err", err)
				continue
			}
			results[name] = "ok"
		}
		status := "ok"
		if code != http.StatusOK {
			status = "unavailable"
		}
		writeJSON(w, code, map[string]any{"status": status, "checks": results})
	})
}

func openapi(doc []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(doc)
	})
}

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
