package identity

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/bcrypt"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/platform/clientaddr"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ratelimit"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/web"
	"github.com/assessd/assessd/tenancy"
)

// scopeWords describes each scope in plain words on the consent page.
var scopeWords = map[tenancy.Scope]string{
	tenancy.ScopeOpenID:             "Confirm your identity",
	tenancy.ScopeProfile:            "See your name and role",
	tenancy.ScopeEmail:              "See your email address",
	tenancy.ScopeOfflineAccess:      "Stay connected when you are not using it",
	tenancy.ScopeUsersRead:          "See the people in your organization",
	tenancy.ScopeUsersWrite:         "Add, change and remove people in your organization",
	tenancy.ScopeOrgsRead:           "See your organization's settings",
	tenancy.ScopeOrgsWrite:          "Change your organization's settings",
	tenancy.ScopeExamsRead:          "See exams, folders and questions",
	tenancy.ScopeExamsWrite:         "Create, change and delete exams, folders and questions",
	tenancy.ScopeResultsRead:        "See exam results",
	tenancy.ScopeResultsWrite:       "Submit and change exam results",
	tenancy.ScopeQuestionTypesRead:  "See question types",
	tenancy.ScopeQuestionTypesWrite: "Create and change question types",
	tenancy.ScopeEmbedWrite:         "Embed assessd flows in its own pages",
	tenancy.ScopeAuditLogsRead:      "Read your organization's audit log",
	tenancy.ScopeAuditLogsWrite:     "Write entries to your organization's audit log",
}

// Routes registers the login, consent and logout pages on mux.
func (p *Provider) Routes(mux *http.ServeMux) {
	r := web.TextRoutes{Mux: mux}
	r.HandleFunc("GET /login", p.loginPage)
	r.HandleFunc("POST /login", p.login)
	r.HandleFunc("POST /consent", p.consent)
	r.HandleFunc("POST /logout", p.logout)
}

type loginView struct {
	CSRF, AuthRequestID, Email, Error string
}

// loginPage shows the sign-in form, or, for a signed-in browser with an
// authorization request, the consent screen.
func (p *Provider) loginPage(w http.ResponseWriter, r *http.Request) {
	authRequestID := r.URL.Query().Get("authRequestID")
	s, err := p.session(r)
	switch {
	case err == nil && authRequestID != "":
		p.consentPage(w, r, s, authRequestID)
		return
	case err == nil:
		http.Redirect(w, r, "/account", http.StatusSeeOther)
		return
	case !errors.Is(err, errNoSession):
		web.FailedPage(w, r, err, "Signing in is unavailable right now.")
		return
	}
	p.renderLogin(w, r, http.StatusOK, loginView{AuthRequestID: authRequestID})
}

func (p *Provider) renderLogin(w http.ResponseWriter, r *http.Request, status int, v loginView) {
	v.CSRF = NewSecret()
	p.setCookie(w, loginCSRFCookie, v.CSRF, time.Hour)
	web.Render(w, r, status, "login.html", v)
}

// signInFor sends the browser to sign in for authorization request id.
func signInFor(w http.ResponseWriter, r *http.Request, id string) {
	http.Redirect(w, r, "/login?authRequestID="+url.QueryEscape(id), http.StatusSeeOther)
}

// staleLink answers a sign-in whose authorization request is answered,
// expired or gone: only the app can start a new one.
func (p *Provider) staleLink(w http.ResponseWriter, r *http.Request) {
	web.FailPage(w, r, http.StatusBadRequest, "This sign-in link is no longer valid", "Return to the app and start signing in again.")
}

// login checks the credentials (CSRF-protected by a double-submit cookie,
// rate limited per address and email) and starts a session.
func (p *Provider) login(w http.ResponseWriter, r *http.Request) {
	v := loginView{AuthRequestID: r.PostFormValue("authRequestID"), Email: strings.TrimSpace(r.PostFormValue("email"))}
	c, err := r.Cookie(loginCSRFCookie)
	if err != nil || !validCSRF(r.PostFormValue("csrf"), c.Value) {
		v.Error = "Your sign-in form expired. Please try again."
		p.renderLogin(w, r, http.StatusForbidden, v)
		return
	}
	addr, email := clientaddr.From(r), strings.ToLower(v.Email)
	if blocked, retry := p.loginFailures.Blocked(r.Context(), addr, email); blocked {
		p.metrics.logins.WithLabelValues("rate_limited").Inc()
		w.Header().Set("Retry-After", strconv.Itoa(ratelimit.RetryAfterSeconds(retry)))
		v.Error = "Too many failed sign-ins. Please wait a minute and try again."
		p.renderLogin(w, r, http.StatusTooManyRequests, v)
		return
	}
	orgID, userID, err := p.checkPassword(r.Context(), v.Email, r.PostFormValue("password"), addr)
	if err == nil {
		err = p.startSession(r.Context(), w, orgID, userID)
	}
	if errors.Is(err, errBadCredentials) {
		p.loginFailures.Fail(r.Context(), addr, email)
		p.metrics.logins.WithLabelValues("failure").Inc()
		v.Error = "The email or password is not correct."
		p.renderLogin(w, r, http.StatusUnauthorized, v)
		return
	}
	if err != nil {
		web.FailedPage(w, r, err, "Signing in is unavailable right now.")
		return
	}
	p.metrics.logins.WithLabelValues("success").Inc()
	p.auditSignIn(r.Context(), "user.signed_in", orgID, userID, audit.Actor{Kind: audit.ActorUser, ID: userID}, addr)
	next := "/account"
	if v.AuthRequestID != "" {
		next = "/login?authRequestID=" + url.QueryEscape(v.AuthRequestID)
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// dummyHash keeps the time of a login with an unknown email close to one
// with a wrong password.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("no such user"), bcrypt.DefaultCost)

var errBadCredentials = errors.New("bad credentials")

// loginActor is the login form, the actor of a failed sign-in: nobody is
// authenticated yet.
var loginActor = audit.Actor{Kind: audit.ActorSystem, ID: "login"}

// auditSignIn writes a sign-in entry to orgID's audit log, with the
// client address. It is best effort: a sign-in is not refused because its
// entry could not be written, and the failure is logged.
func (p *Provider) auditSignIn(ctx context.Context, action, orgID, userID string, actor audit.Actor, addr string) {
	ctx = store.WithOrg(ctx, orgID)
	if err := audit.Record(ctx, p.db, audit.Entry{Action: action, Actor: actor,
		Target: audit.Target{Type: "user", ID: userID}, After: map[string]any{"address": addr}}); err != nil {
		slog.ErrorContext(ctx, "audit sign-in", "action", action, "err", err)
	}
}

// checkPassword finds the user with email and password. A wrong password
// for an existing account is audited in that account's organization as
// user.sign_in_failed; an unknown email belongs to no organization, so
// only the metrics count it.
func (p *Provider) checkPassword(ctx context.Context, email, password, addr string) (orgID, userID string, err error) {
	rows, err := p.db.Unscoped().Query(ctx, `SELECT user_id, org_id, password_hash FROM users_for_login($1)`, email)
	if err != nil {
		return "", "", err
	}
	type candidate struct{ userID, orgID, hash string }
	candidates, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (candidate, error) {
		var c candidate
		return c, row.Scan(&c.userID, &c.orgID, &c.hash)
	})
	if err != nil {
		return "", "", err
	}
	if len(candidates) == 0 {
		_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(password))
		return "", "", errBadCredentials
	}
	for _, c := range candidates {
		if bcrypt.CompareHashAndPassword([]byte(c.hash), []byte(password)) == nil {
			return c.orgID, c.userID, nil
		}
	}
	for _, c := range candidates {
		p.auditSignIn(ctx, "user.sign_in_failed", c.orgID, c.userID, loginActor, addr)
	}
	return "", "", errBadCredentials
}

type consentView struct {
	CSRF, AuthRequestID, ClientName, ClientDescription, UserName string
	Scopes                                                       []string
}

func (p *Provider) consentPage(w http.ResponseWriter, r *http.Request, s *Session, authRequestID string) {
	a, c, caller, err := p.pendingRequest(r.Context(), s, authRequestID)
	if err != nil {
		p.unusableRequest(w, r, err)
		return
	}
	scopes, err := p.grantableScopes(r.Context(), caller, c, a.scopes)
	if err != nil {
		web.FailedPage(w, r, err, "Authorization is unavailable right now.")
		return
	}
	ctx := tenancy.WithCaller(r.Context(), caller)
	u, err := p.storage.users.LookupUser(ctx, s.UserID)
	if err != nil {
		web.FailedPage(w, r, err, "Authorization is unavailable right now.")
		return
	}
	v := consentView{CSRF: s.CSRF, AuthRequestID: a.id, ClientName: c.name, ClientDescription: c.description, UserName: u.Name}
	for _, sc := range scopes {
		v.Scopes = append(v.Scopes, scopeWords[tenancy.Scope(sc)])
	}
	web.Render(w, r, http.StatusOK, "consent.html", v)
}

// pendingRequest loads an authorization request awaiting consent, its
// client, and the signed-in user as a caller.
func (p *Provider) pendingRequest(ctx context.Context, s *Session, id string) (*authRequest, *client, *tenancy.Caller, error) {
	a, err := p.storage.authRequest(ctx, id)
	if err != nil {
		return nil, nil, nil, err
	}
	if a.done {
		return a, nil, nil, errAnswered
	}
	c, err := p.storage.client(ctx, a.clientID)
	if err != nil {
		return nil, nil, nil, err
	}
	u, err := p.storage.users.LookupUser(store.WithOrg(ctx, s.OrgID), s.UserID)
	if err != nil {
		return nil, nil, nil, err
	}
	caller := &tenancy.Caller{Kind: tenancy.KindOAuthApp, OrgID: s.OrgID, UserID: s.UserID, ClientID: c.id, Role: u.Role}
	return a, c, caller, nil
}

// errAnswered is the error of an authorization request the user already
// approved.
var errAnswered = errors.New("authorization request already answered")

// unusableRequest answers a consent whose authorization request could not
// be used: the stale link when the request, its client or its user is gone
// or the request was answered, for the user to start again from the app;
// otherwise it could not be read, which starting again would not cure.
func (p *Provider) unusableRequest(w http.ResponseWriter, r *http.Request, err error) {
	var gone interface{ IsNotFound() }
	if errors.As(err, &gone) || errors.Is(err, errAnswered) || errs.Is(err, errs.KindNotFound) {
		p.staleLink(w, r)
		return
	}
	web.FailedPage(w, r, err, "Authorization is unavailable right now.")
}

// approvedAgain reports whether a is a request that s's user approved
// and whose code the app has not exchanged yet: a double click on
// Approve, whose second answer is the one the browser follows. It goes on
// as the first did. Once the code is exchanged, the request is spent.
func approvedAgain(a *authRequest, err error, s *Session) bool {
	return errors.Is(err, errAnswered) && a.userID == s.UserID && a.orgID == s.OrgID && a.grantID == ""
}

// grantableScopes narrows the requested scopes to those the user's role
// allows, audit-logs:write only when the user's organization allowed this
// client to have it, and adds offline_access.
func (p *Provider) grantableScopes(ctx context.Context, caller *tenancy.Caller, c *client, requested []string) ([]string, error) {
	allowed := tenancy.ScopesForRole(caller.Role)
	var out []string
	for _, s := range requested {
		sc := tenancy.Scope(s)
		if !slices.Contains(allowed, sc) || slices.Contains(out, s) {
			continue
		}
		if sc == tenancy.ScopeAuditLogsWrite {
			ok, err := p.auditWriteAllowed(ctx, caller.OrgID, c.id)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		out = append(out, s)
	}
	// Every code exchange returns a refresh token (spec 2.8), so offline
	// access is granted whether or not it was asked for; the token
	// response's scope says so.
	if !slices.Contains(out, string(tenancy.ScopeOfflineAccess)) {
		out = append(out, string(tenancy.ScopeOfflineAccess))
	}
	return out, nil
}

func (p *Provider) auditWriteAllowed(ctx context.Context, orgID, clientID string) (bool, error) {
	ctx = store.WithOrg(ctx, orgID)
	var n int
	err := p.db.Q(ctx).QueryRow(ctx, `SELECT count(*) FROM oauth_client_audit_allowances WHERE org_id = app_org_id() AND client_id = $1`, clientID).Scan(&n)
	return n > 0, err
}

// consent records the user's Approve or Deny and sends the browser back
// to the client through the provider.
func (p *Provider) consent(w http.ResponseWriter, r *http.Request) {
	s, err := p.session(r)
	if err != nil {
		signInFor(w, r, r.PostFormValue("authRequestID"))
		return
	}
	if !validCSRF(r.PostFormValue("csrf"), s.CSRF) {
		web.FailPage(w, r, http.StatusForbidden, "Request refused", "The form was not sent from this site.")
		return
	}
	a, c, caller, err := p.pendingRequest(r.Context(), s, r.PostFormValue("authRequestID"))
	approve := r.PostFormValue("decision") == "approve"
	if approve && approvedAgain(a, err, s) {
		http.Redirect(w, r, p.authCallbackURL(r.Context(), a.id), http.StatusSeeOther)
		return
	}
	if err != nil {
		p.unusableRequest(w, r, err)
		return
	}
	if !approve {
		p.denyAuthRequest(w, r, a)
		return
	}
	scopes, err := p.grantableScopes(r.Context(), caller, c, a.scopes)
	if err == nil {
		err = p.storage.completeAuthRequest(r.Context(), a.id, caller, scopes)
		if store.ForeignKey(err) != "" {
			// The user was deleted since signing in, and their session
			// with them.
			signInFor(w, r, a.id)
			return
		}
		if errors.As(err, new(errNotFound)) {
			// Another approval of it committed since it was read, or it
			// was deleted with its app or user.
			again, aerr := p.storage.authRequest(r.Context(), a.id)
			if aerr == nil && again.done && approvedAgain(again, errAnswered, s) {
				http.Redirect(w, r, p.authCallbackURL(r.Context(), a.id), http.StatusSeeOther)
				return
			}
			if errors.As(aerr, new(errNotFound)) {
				p.staleLink(w, r)
				return
			}
		}
	}
	if err == nil {
		ctx := store.WithOrg(r.Context(), caller.OrgID)
		err = audit.Record(ctx, p.db, audit.Entry{Action: "oauth_consent.granted", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "oauth_client", ID: c.id}, After: map[string]any{"scopes": anySlice(scopes)}})
	}
	if err != nil {
		web.FailedPage(w, r, err, "Authorization is unavailable right now.")
		return
	}
	http.Redirect(w, r, p.authCallbackURL(r.Context(), a.id), http.StatusSeeOther)
}

// anySlice converts strings for an audit snapshot (JSON values).
func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func (p *Provider) logout(w http.ResponseWriter, r *http.Request) {
	if s, err := p.session(r); err == nil && validCSRF(r.PostFormValue("csrf"), s.CSRF) {
		_ = p.endSession(w, r, s)
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
