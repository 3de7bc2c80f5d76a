package server

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/time/rate"

	"github.com/assessd/assessd/api"
	"github.com/assessd/assessd/errs"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/tenancy"
)

// Failed authentications per client address are limited to a burst of
// failureBurst, refilled at failureRate; beyond that the address gets 429
// until the bucket refills, which blunts credential guessing.
const (
	failureBurst   = 20
	failureRate    = rate.Limit(1.0 / 6) // 10 per minute
	trackedClients = 10_000
)

type authenticator struct {
	credentials []Credential
	metrics     *observability.Metrics
	failures    *expirable.LRU[string, *rate.Limiter]
}

func newAuthenticator(creds []Credential, m *observability.Metrics) *authenticator {
	return &authenticator{
		credentials: creds,
		metrics:     m,
		failures:    expirable.NewLRU[string, *rate.Limiter](trackedClients, nil, 10*time.Minute),
	}
}

// middleware resolves the bearer token to a tenancy.Caller and puts it in
// the request context, or answers 401 (or 429 for an address that failed
// too often).
func (a *authenticator) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client := clientAddr(r)
		if lim, ok := a.failures.Get(client); ok && lim.Tokens() < 1 {
			retry := time.Duration(float64(time.Second) * (1 - lim.Tokens()) / float64(failureRate))
			w.Header().Set("Retry-After", strconv.Itoa(int(retry.Seconds())+1))
			a.metrics.AuthFailures.WithLabelValues("rate_limited").Inc()
			api.WriteError(w, r, api.NewError(connect.CodeResourceExhausted, "TOO_MANY_FAILED_AUTHENTICATIONS",
				"too many failed authentication attempts; retry later", "", nil))
			return
		}
		caller, err := a.authenticate(r)
		if err != nil {
			if errs.Is(err, errs.KindUnauthenticated) {
				a.recordFailure(client)
			}
			api.WriteError(w, r, api.ToConnect(r.Context(), err))
			return
		}
		observability.Info(r.Context()).OrgID = caller.OrgID
		next.ServeHTTP(w, r.WithContext(tenancy.WithCaller(r.Context(), caller)))
	})
}

func (a *authenticator) authenticate(r *http.Request) (*tenancy.Caller, error) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if h == "" {
		a.metrics.AuthFailures.WithLabelValues("missing").Inc()
		return nil, errs.Unauthenticated("missing bearer token: send Authorization: Bearer <token>")
	}
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		a.metrics.AuthFailures.WithLabelValues("malformed").Inc()
		return nil, errs.Unauthenticated("the Authorization header must be: Bearer <token>")
	}
	for _, c := range a.credentials {
		if strings.HasPrefix(token, c.Prefix) {
			caller, err := c.Authenticate(r.Context(), token)
			if err != nil {
				a.metrics.AuthFailures.WithLabelValues("invalid").Inc()
			}
			return caller, err
		}
	}
	a.metrics.AuthFailures.WithLabelValues("invalid").Inc()
	return nil, errs.Unauthenticated("unrecognized bearer token")
}

func (a *authenticator) recordFailure(client string) {
	lim, ok := a.failures.Get(client)
	if !ok {
		lim = rate.NewLimiter(failureRate, failureBurst)
		a.failures.Add(client, lim)
	}
	lim.Allow()
}

// clientAddr is the remote IP. Deployments behind a proxy terminate the
// connection there, so per-address limits then apply per proxy; see
// docs/decisions for the trusted-proxy follow-up.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
