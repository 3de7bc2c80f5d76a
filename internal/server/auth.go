package server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"connectrpc.com/connect"

	"github.com/assessd/assessd/internal/platform/apihttp"
	"github.com/assessd/assessd/internal/platform/clientaddr"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ratelimit"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/tenancy"
)

type authenticator struct {
	credentials []Credential
	metrics     *observability.Metrics
	// failures blunts credential guessing: an address may fail 20 times
	// with one credential, refilled at 10 a minute; beyond that that pair
	// gets 429 until it refills.
	failures *ratelimit.Failures
	// quotas, when set, holds each organization to its plan's quota;
	// students, when set, each student to a quota of their own.
	quotas, students *ratelimit.Quotas
}

func newAuthenticator(cfg Config, limiter *ratelimit.Limiter) *authenticator {
	return &authenticator{credentials: cfg.Credentials, metrics: cfg.Metrics,
		failures: limiter.Failures("api_auth_failures", 20, 10), quotas: cfg.Quotas,
		students: cfg.StudentQuotas}
}

// middleware resolves the bearer token to a tenancy.Caller and puts it in
// the request context, or answers 401 (429 for an address that failed too
// often with the credential, 503 when credentials cannot be checked), then
// counts the request against its organization's quota, or a student's
// against their own.
func (a *authenticator) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		client := clientaddr.From(r)
		token, cred, err := a.bearer(r)
		if blocked, retry := a.failures.Blocked(ctx, client, subjectOf(cred, token)); blocked {
			w.Header().Set("Retry-After", strconv.Itoa(ratelimit.RetryAfterSeconds(retry)))
			a.metrics.AuthFailures.WithLabelValues("rate_limited").Inc()
			apihttp.WriteError(w, r, apihttp.NewError(connect.CodeResourceExhausted, "TOO_MANY_FAILED_AUTHENTICATIONS",
				"too many failed authentication attempts; retry later", "", nil))
			return
		}
		var caller *tenancy.Caller
		if err == nil {
			caller, err = cred.Authenticate(ctx, token)
			if err != nil {
				a.metrics.AuthFailures.WithLabelValues("invalid").Inc()
			}
		}
		if err != nil {
			if errs.Is(err, errs.KindUnauthenticated) {
				a.failures.Fail(ctx, client, subjectOf(cred, token))
			}
			apihttp.WriteError(w, r, apihttp.ToConnect(ctx, err))
			return
		}
		observability.Info(ctx).OrgID = caller.OrgID
		if quotas, subject, whose := a.quotaOf(caller); quotas != nil {
			d := quotas.TakeFor(ctx, caller.OrgID, subject)
			d.SetHeaders(w.Header())
			if !d.Allowed {
				apihttp.WriteError(w, r, apihttp.NewError(connect.CodeResourceExhausted, "RATE_LIMITED",
					fmt.Sprintf("%s request quota (%d requests per %s) is used up; retry after %d seconds",
						whose, d.Limit.Rate, d.Limit.Period, ratelimit.RetryAfterSeconds(d.RetryAfter)), "", nil))
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(tenancy.WithCaller(ctx, caller)))
	})
}

// quotaOf is the quota caller's request counts against, its subject, and
// whose it is in words.
func (a *authenticator) quotaOf(c *tenancy.Caller) (*ratelimit.Quotas, string, string) {
	if c.Role == tenancy.RoleStudent && a.students != nil {
		return a.students, "student:" + c.UserID, "your"
	}
	return a.quotas, c.OrgID, "the organization's"
}

// bearer reads the bearer token and picks the credential kind that
// authenticates it.
func (a *authenticator) bearer(r *http.Request) (string, *Credential, error) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if h == "" {
		a.metrics.AuthFailures.WithLabelValues("missing").Inc()
		return "", nil, errs.Unauthenticated("missing bearer token: send Authorization: Bearer <token>")
	}
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		a.metrics.AuthFailures.WithLabelValues("malformed").Inc()
		return "", nil, errs.Unauthenticated("the Authorization header must be: Bearer <token>")
	}
	for i := range a.credentials {
		if a.credentials[i].Match(token) {
			return token, &a.credentials[i], nil
		}
	}
	a.metrics.AuthFailures.WithLabelValues("invalid").Inc()
	return "", nil, errs.Unauthenticated("unrecognized bearer token")
}

// subjectOf names the credential a token claims to be, for failure limits.
func subjectOf(c *Credential, token string) string {
	if c == nil || c.Subject == nil {
		return ""
	}
	return c.Subject(token)
}
