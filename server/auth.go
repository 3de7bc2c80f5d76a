package server

import (
	"net/http"
	"strconv"
	"strings"

	"connectrpc.com/connect"

	"github.com/assessd/assessd/api"
	"github.com/assessd/assessd/errs"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/ratelimit"
	"github.com/assessd/assessd/tenancy"
)

type authenticator struct {
	credentials []Credential
	metrics     *observability.Metrics
	// failures blunts credential guessing: an address may fail 20 times,
	// refilled at 10 a minute; beyond that it gets 429 until it refills.
	failures *ratelimit.Failures
}

func newAuthenticator(creds []Credential, m *observability.Metrics) *authenticator {
	return &authenticator{credentials: creds, metrics: m, failures: ratelimit.NewFailures(10_000, 20, 10)}
}

// middleware resolves the bearer token to a tenancy.Caller and puts it in
// the request context, or answers 401 (or 429 for an address that failed
// too often).
func (a *authenticator) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client := ratelimit.ClientAddr(r)
		if blocked, retry := a.failures.Blocked(client); blocked {
			w.Header().Set("Retry-After", strconv.Itoa(int(retry.Seconds())+1))
			a.metrics.AuthFailures.WithLabelValues("rate_limited").Inc()
			api.WriteError(w, r, api.NewError(connect.CodeResourceExhausted, "TOO_MANY_FAILED_AUTHENTICATIONS",
				"too many failed authentication attempts; retry later", "", nil))
			return
		}
		caller, err := a.authenticate(r)
		if err != nil {
			if errs.Is(err, errs.KindUnauthenticated) {
				a.failures.Fail(client)
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
		if c.Match(token) {
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
