// Package ltiflow serves the LTI tool's endpoints (issue 57, decision
// 0200): the login initiation, the launch, and the tool's public keys.
// internal/lti verifies a launch and matches its user and course; this
// package opens what it asks for: a learner's attempt of the linked
// assignment in the embedded student page, or for an instructor the
// assignment's progress and its exam's authoring page, each an embed
// session created server-side and framed only by the platform.
package ltiflow

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/assessd/assessd/internal/delivery"
	"github.com/assessd/assessd/internal/embedflow"
	"github.com/assessd/assessd/internal/lti"
	"github.com/assessd/assessd/internal/platform/clientaddr"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ratelimit"
	"github.com/assessd/assessd/internal/platform/textcheck"
	"github.com/assessd/assessd/internal/web"
	"github.com/assessd/assessd/tenancy"
)

// Embeds creates the embed sessions a launch opens (embedflow.Service).
type Embeds interface {
	Create(ctx context.Context, in embedflow.NewSession) (embedflow.Session, error)
	URL(sess embedflow.Session) string
}

// Assignments reads the assignment a link opens and creates the one a
// deep link makes (delivery.Service).
type Assignments interface {
	Assignment(ctx context.Context, id string) (delivery.Assignment, error)
	CreateAssignment(ctx context.Context, in delivery.NewAssignment) (delivery.Assignment, error)
}

var (
	_ Embeds      = (*embedflow.Service)(nil)
	_ Assignments = (*delivery.Service)(nil)
)

// Handler serves the LTI endpoints.
type Handler struct {
	tool        *lti.Service
	embeds      Embeds
	assignments Assignments
	exams       Exams
	limiter     *ratelimit.Limiter
	logins      ratelimit.Limit
	launches    ratelimit.Limit
}

// New returns the LTI endpoints of tool, opening pages through embeds;
// limiter bounds the logins, and the launches, of one client address to
// perMinute each (0: DefaultPerMinute).
func New(tool *lti.Service, embeds Embeds, assignments Assignments, exams Exams, limiter *ratelimit.Limiter, perMinute int) *Handler {
	if perMinute <= 0 {
		perMinute = DefaultPerMinute
	}
	return &Handler{tool: tool, embeds: embeds, assignments: assignments, exams: exams, limiter: limiter,
		logins:   ratelimit.PerWindow("lti_login", perMinute, time.Minute),
		launches: ratelimit.PerWindow("lti_launch", perMinute, time.Minute)}
}

// DefaultPerMinute is the limit of one client address's logins, and of its
// launches (decision 0205): a login keeps a state in Redis for five
// minutes, so without a bound anyone could fill it. A school behind one
// address starts a class of hundreds at once: 600 a minute, all at once if
// need be.
const DefaultPerMinute = 600

// limited answers 429 with a page when the client address has used up
// lim, else runs h.
func (h *Handler) limited(lim ratelimit.Limit, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		d := h.limiter.Take(r.Context(), lim.Name+":"+clientaddr.From(r), lim)
		if !d.Allowed {
			h.limiter.Throttled("", lim)
			w.Header().Set("Retry-After", strconv.Itoa(ratelimit.RetryAfterSeconds(d.RetryAfter)))
			refusedPage(w, r, "Too many launches", &errs.Error{Kind: errs.KindRateLimited, Reason: "TOO_MANY_LAUNCHES",
				Message: "Too many LTI logins or launches came from your network in the last minute. Launch again in a moment."})
			return
		}
		next(w, r)
	}
}

// Routes registers the endpoints on mux: GET and POST /lti/login, POST
// /lti/launch, GET /lti/jwks, and the deep-linking choice, POST
// /lti/deep-linking/{id}.
func (h *Handler) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /lti/login", h.limited(h.logins, textChecked(h.login)))
	mux.HandleFunc("POST /lti/login", h.limited(h.logins, textChecked(h.login)))
	mux.HandleFunc("POST /lti/launch", h.limited(h.launches, textChecked(h.launch)))
	mux.HandleFunc("GET /lti/deep-linking/{id}", textChecked(h.searchExams))
	mux.HandleFunc("POST /lti/deep-linking/{id}", textChecked(h.chooseLink))
	mux.HandleFunc("GET /lti/jwks", h.jwks)
}

// textChecked holds a request's query and form to the API's text rule
// (textcheck) before h reads them: a NUL, which PostgreSQL cannot store,
// would otherwise reach a query and be answered as an outage.
func textChecked(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		problem := "form could not be read"
		if err := r.ParseForm(); err == nil {
			field, p := textcheck.FormProblem(r.Form)
			if problem = p; field != "" {
				problem = field + " " + p
			}
		}
		if problem != "" {
			refusedPage(w, r, "Request refused", &errs.Error{Kind: errs.KindInvalid, Reason: "REQUEST_TEXT_INVALID",
				Message: "The request's " + problem + "."})
			return
		}
		h(w, r)
	}
}

// login answers a platform's login initiation (query or form) with a
// redirect to its authorization endpoint.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	redirect, err := h.tool.Login(r.Context(), lti.LoginRequest{
		Issuer: r.FormValue("iss"), LoginHint: r.FormValue("login_hint"), TargetLinkURI: r.FormValue("target_link_uri"),
		MessageHint: r.FormValue("lti_message_hint"), ClientID: r.FormValue("client_id"), DeploymentID: r.FormValue("lti_deployment_id"),
	})
	if err != nil {
		refusedPage(w, r, "Sign-in refused", err)
		return
	}
	http.Redirect(w, r, redirect, http.StatusFound)
}

// jwks publishes the tool's public keys.
func (h *Handler) jwks(w http.ResponseWriter, r *http.Request) {
	set, err := h.tool.ToolKeys.JWKS(r.Context())
	if err != nil {
		web.Fail(w, r, err)
		return
	}
	body, err := json.Marshal(set)
	if err != nil {
		web.Fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	// Platforms cache the set; a new key is published a minute before it
	// signs (signingkeys' reload), so five minutes of caching only delays
	// a rotation's first use by a few minutes at most.
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(body)
}

// anyFrame are the frame ancestors of a refusal page: whoever framed the
// launch may show why it was refused; the page holds nothing to act on.
var anyFrame = []string{"*"}

// refusedPage answers a refused login or launch with a page saying why.
func refusedPage(w http.ResponseWriter, r *http.Request, title string, err error) {
	status, message := web.Failure(r.Context(), err)
	reason := ""
	if e, ok := errs.As(err); ok {
		reason = e.Reason
	}
	web.RenderFramed(w, r, status, "lti-refused.html", refusedView{Title: title, Message: message, Reason: reason}, anyFrame)
}

type refusedView struct {
	Title, Message, Reason string
}

// launchCaller is who the pages a launch opens are created by: the
// launch's platform in its organization, with what creating them takes.
func launchCaller(l lti.Launch) *tenancy.Caller {
	return lti.PlatformCaller(l.OrgID, l.Platform.ID, tenancy.ScopeEmbedWrite, tenancy.ScopeAssignmentsRead, tenancy.ScopeExamsRead)
}

// logLaunch notes a launch that was verified but could not open its page.
func logLaunch(ctx context.Context, l lti.Launch, err error) {
	slog.WarnContext(ctx, "open an LTI launch's page", "org", l.OrgID, "platform", l.Platform.ID, "user", l.UserID, "err", err)
}
