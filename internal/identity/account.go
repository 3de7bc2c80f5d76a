package identity

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/web"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/tenancy"
)

// accountRoutes registers the account settings and the developer area.
func (p *Provider) accountRoutes(mux textRoutes) {
	mux.HandleFunc("GET /account", p.signedIn(p.accountPage))
	mux.HandleFunc("POST /account/profile", p.signedIn(p.updateProfile))
	mux.HandleFunc("POST /account/api-keys", p.signedIn(p.createKey))
	mux.HandleFunc("POST /account/api-keys/{id}/revoke", p.signedIn(p.revokeKey))
	mux.HandleFunc("POST /account/apps/{client}/revoke", p.signedIn(p.revokeApp))
	mux.HandleFunc("POST /account/allowed-apps", p.signedIn(p.allowApp))
	mux.HandleFunc("POST /account/allowed-apps/{client}/remove", p.signedIn(p.removeAllowedApp))
	mux.HandleFunc("GET /developer", p.signedIn(p.developerPage))
	mux.HandleFunc("POST /developer/clients", p.signedIn(p.createClient))
	mux.HandleFunc("GET /developer/clients/{id}", p.signedIn(p.clientPage))
	mux.HandleFunc("POST /developer/clients/{id}", p.signedIn(p.updateClient))
	mux.HandleFunc("POST /developer/clients/{id}/rotate", p.signedIn(p.rotateClient))
	mux.HandleFunc("POST /developer/clients/{id}/delete", p.signedIn(p.deleteClient))
	p.webhookRoutes(mux)
	p.ltiRoutes(mux)
}

// signedIn runs h for a signed-in browser as that user, with every scope
// the user's role allows; POSTs must carry the session's CSRF token.
func (p *Provider) signedIn(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := p.session(r)
		if errors.Is(err, errNoSession) {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		if err != nil {
			p.failedPage(w, r, err, "Your account is unavailable right now.")
			return
		}
		observability.Info(r.Context()).OrgID = s.orgID
		if r.Method == http.MethodPost && !validCSRF(r.PostFormValue("csrf"), s.csrf) {
			p.failPage(w, r, http.StatusForbidden, "Request refused", "The form was not sent from this site.")
			return
		}
		u, err := p.storage.users.LookupUser(store.WithOrg(r.Context(), s.orgID), s.userID)
		if err != nil {
			p.userGone(w, r, s)
			return
		}
		caller := &tenancy.Caller{Kind: tenancy.KindSession, OrgID: s.orgID, UserID: s.userID, CredentialID: "session",
			Role: u.Role, Scopes: tenancy.ScopesForRole(u.Role)}
		h(w, r.WithContext(tenancy.WithCaller(r.Context(), caller)), s)
	}
}

// userGone ends the session of a user who no longer exists and sends the
// browser to sign in.
func (p *Provider) userGone(w http.ResponseWriter, r *http.Request, s *session) {
	_ = p.endSession(w, r, s)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// notices are the fixed messages a redirect may ask a page to show.
var notices = map[string]string{
	"saved":                "Saved.",
	"key-revoked":          "The API key was revoked.",
	"app-revoked":          "The app's access was revoked; its tokens no longer work.",
	"client-delete":        "The client was deleted.",
	"webhook-deleted":      "The webhook endpoint was deleted; its pending deliveries stop.",
	"lti-platform-deleted": "The learning platform was removed; its launches are refused from now on.",
	"app-allowed":          "The app may now write to your organization's audit log.",
	"app-removed":          "The app may no longer write to your organization's audit log.",
}

type keyRow struct {
	ID, Name, Created, LastUsed, Status string
	Active                              bool
}

type appRow struct {
	ClientID, Name, Scopes, Since string
}

type accountView struct {
	CSRF, Name, Email, Role, Notice, Error, NewKey string
	Keys                                           []keyRow
	Apps                                           []appRow
	// ManagesApps shows owners and admins the apps their organization
	// allowed extra scopes (AllowedApps).
	ManagesApps bool
	AllowedApps []AllowedClient
}

func day(t time.Time) string { return t.UTC().Format("2006-01-02") }

func (p *Provider) renderAccount(w http.ResponseWriter, r *http.Request, s *session, v accountView, status int) {
	ctx := r.Context()
	me, err := p.tenancy.Me(ctx)
	if errs.Is(err, errs.KindNotFound) { // deleted while this request ran
		p.userGone(w, r, s)
		return
	}
	if err != nil {
		p.failedPage(w, r, err, "Your account is unavailable right now.")
		return
	}
	keys, err := p.tenancy.ListAPIKeys(ctx, s.userID)
	if err == nil {
		v.Apps, err = p.connectedApps(ctx, s.userID)
	}
	if _, denied := tenancy.Authorize(ctx, readAllowedClients); err == nil && denied == nil {
		v.ManagesApps = true
		v.AllowedApps, _, err = p.AllowedClients(ctx, paging.Page{Size: paging.MaxSize})
	}
	if err != nil {
		p.failedPage(w, r, err, "Your account is unavailable right now.")
		return
	}
	v.CSRF, v.Name, v.Email, v.Role = s.csrf, me.Name, me.Email, string(me.Role)
	for _, k := range keys {
		row := keyRow{ID: k.ID, Name: k.Name, Created: day(k.CreatedAt), LastUsed: "never", Status: "active", Active: k.RevokedAt == nil}
		if k.LastUsedAt != nil {
			row.LastUsed = day(*k.LastUsedAt)
		}
		if !row.Active {
			row.Status = "revoked"
		}
		v.Keys = append(v.Keys, row)
	}
	web.Render(w, r, status, "account.html", v)
}

func (p *Provider) accountPage(w http.ResponseWriter, r *http.Request, s *session) {
	p.renderAccount(w, r, s, accountView{Notice: notices[r.URL.Query().Get("notice")]}, http.StatusOK)
}

// pageError shows a domain error's message on the page the form came
// from, with the status the API answers that error with; anything else is
// the page's failure.
func (p *Provider) pageError(w http.ResponseWriter, r *http.Request, err error, retry func(msg string, status int)) {
	if e, ok := errs.As(err); ok && e.Kind != errs.KindUnavailable {
		retry(e.Message, e.Kind.HTTPStatus())
		return
	}
	p.failedPage(w, r, err, "That did not work right now.")
}

func (p *Provider) updateProfile(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PostFormValue("name")
	if _, err := p.tenancy.UpdateMe(r.Context(), &name); err != nil {
		p.pageError(w, r, err, func(msg string, status int) { p.renderAccount(w, r, s, accountView{Error: msg}, status) })
		return
	}
	http.Redirect(w, r, "/account?notice=saved", http.StatusSeeOther)
}

// createKey shows the new key on the page itself, once; it never travels
// in a URL.
func (p *Provider) createKey(w http.ResponseWriter, r *http.Request, s *session) {
	_, plain, err := p.tenancy.CreateAPIKey(r.Context(), s.userID, r.PostFormValue("name"))
	if err != nil {
		p.pageError(w, r, err, func(msg string, status int) { p.renderAccount(w, r, s, accountView{Error: msg}, status) })
		return
	}
	p.renderAccount(w, r, s, accountView{NewKey: plain}, http.StatusOK)
}

func (p *Provider) revokeKey(w http.ResponseWriter, r *http.Request, s *session) {
	if err := p.tenancy.RevokeAPIKey(r.Context(), r.PathValue("id")); err != nil {
		p.pageError(w, r, err, func(msg string, status int) { p.renderAccount(w, r, s, accountView{Error: msg}, status) })
		return
	}
	http.Redirect(w, r, "/account?notice=key-revoked", http.StatusSeeOther)
}

func (p *Provider) revokeApp(w http.ResponseWriter, r *http.Request, s *session) {
	if err := p.storage.revokeApp(r.Context(), s.userID, r.PathValue("client"), revokedByUser); err != nil {
		p.failedPage(w, r, err, "That did not work right now.")
		return
	}
	http.Redirect(w, r, "/account?notice=app-revoked", http.StatusSeeOther)
}

// allowApp lets the client named in the form write to the organization's
// audit log (owners and admins; AllowClient checks).
func (p *Provider) allowApp(w http.ResponseWriter, r *http.Request, s *session) {
	clientID := strings.TrimSpace(r.PostFormValue("clientId"))
	if _, err := p.AllowClient(r.Context(), clientID, allowableScopes); err != nil {
		p.pageError(w, r, err, func(msg string, status int) {
			p.renderAccount(w, r, s, accountView{Error: "Client ID " + msg + "."}, status)
		})
		return
	}
	http.Redirect(w, r, "/account?notice=app-allowed", http.StatusSeeOther)
}

func (p *Provider) removeAllowedApp(w http.ResponseWriter, r *http.Request, s *session) {
	if err := p.RemoveAllowedClient(r.Context(), r.PathValue("client")); err != nil {
		p.pageError(w, r, err, func(msg string, status int) { p.renderAccount(w, r, s, accountView{Error: msg}, status) })
		return
	}
	http.Redirect(w, r, "/account?notice=app-removed", http.StatusSeeOther)
}

// connectedApps lists the clients holding a live grant of userID.
func (p *Provider) connectedApps(ctx context.Context, userID string) ([]appRow, error) {
	rows, err := p.db.Q(ctx).Query(ctx, `
		SELECT client_id, array_agg(DISTINCT s ORDER BY s), min(created_at)
		  FROM oauth_grants, unnest(scopes) s
		 WHERE org_id = app_org_id() AND user_id = $1 AND revoked_at IS NULL
		 GROUP BY client_id ORDER BY min(created_at)`, userID)
	if err != nil {
		return nil, err
	}
	type grant struct {
		clientID string
		scopes   []string
		since    time.Time
	}
	grants, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (grant, error) {
		var g grant
		return g, r.Scan(&g.clientID, &g.scopes, &g.since)
	})
	if err != nil {
		return nil, err
	}
	var out []appRow
	for _, g := range grants {
		c, err := p.storage.client(ctx, g.clientID)
		if err != nil {
			return nil, err
		}
		out = append(out, appRow{ClientID: c.id, Name: c.name, Scopes: strings.Join(g.scopes, " "), Since: day(g.since)})
	}
	return out, nil
}

// clientForm is the create and edit form of the developer area.
type clientForm struct {
	CSRF, ID, Name, Description, RedirectURIs string
	Public, AuditLogsWrite                    bool
}

type developerView struct {
	Notice, Error, Secret string
	Clients               []Client
	Created               *Client
	Form                  clientForm
}

func (p *Provider) renderDeveloper(w http.ResponseWriter, r *http.Request, s *session, v developerView, status int) {
	clients, err := p.Clients(r.Context())
	if errs.Is(err, errs.KindForbidden) {
		p.failPage(w, r, http.StatusForbidden, "Manage OAuth Clients", "Only owners and admins of your organization can manage OAuth clients.")
		return
	}
	if err != nil {
		p.failedPage(w, r, err, "The developer area is unavailable right now.")
		return
	}
	v.Clients = clients
	v.Form.CSRF = s.csrf
	web.Render(w, r, status, "developer.html", v)
}

func (p *Provider) developerPage(w http.ResponseWriter, r *http.Request, s *session) {
	p.renderDeveloper(w, r, s, developerView{Notice: notices[r.URL.Query().Get("notice")]}, http.StatusOK)
}

func formInput(r *http.Request) (ClientInput, clientForm) {
	f := clientForm{Name: r.PostFormValue("name"), Description: r.PostFormValue("description"),
		RedirectURIs: r.PostFormValue("redirectUris"), Public: r.PostFormValue("public") == "1",
		AuditLogsWrite: r.PostFormValue("auditLogsWrite") == "1"}
	in := ClientInput{Name: f.Name, Description: f.Description, RedirectURIs: strings.Fields(f.RedirectURIs),
		Public: f.Public, AllowAuditLogsWrite: f.AuditLogsWrite}
	return in, f
}

func (p *Provider) createClient(w http.ResponseWriter, r *http.Request, s *session) {
	in, form := formInput(r)
	c, secret, err := p.CreateClient(r.Context(), in)
	if err != nil {
		p.pageError(w, r, err, func(msg string, status int) {
			p.renderDeveloper(w, r, s, developerView{Error: msg, Form: form}, status)
		})
		return
	}
	p.renderDeveloper(w, r, s, developerView{Created: &c, Secret: secret}, http.StatusOK)
}

func (p *Provider) renderClient(w http.ResponseWriter, r *http.Request, s *session, c Client, errMsg, secret string, status int) {
	form := clientForm{CSRF: s.csrf, ID: c.ID, Name: c.Name, Description: c.Description,
		RedirectURIs: strings.Join(c.RedirectURIs, "\n"), Public: c.Public, AuditLogsWrite: c.AuditLogsWrite}
	web.Render(w, r, status, "client.html", map[string]any{"Form": form, "Error": errMsg, "Secret": secret})
}

func (p *Provider) clientPage(w http.ResponseWriter, r *http.Request, s *session) {
	c, err := p.Client(r.Context(), r.PathValue("id"))
	if err != nil {
		p.failPage(w, r, http.StatusNotFound, "Client not found", "There is no such client in your organization.")
		return
	}
	p.renderClient(w, r, s, c, "", "", http.StatusOK)
}

func (p *Provider) updateClient(w http.ResponseWriter, r *http.Request, s *session) {
	in, form := formInput(r)
	c, err := p.UpdateClient(r.Context(), r.PathValue("id"), in)
	if err != nil {
		p.pageError(w, r, err, func(msg string, status int) {
			form.ID = r.PathValue("id")
			p.renderClient(w, r, s, Client{ID: form.ID, Name: form.Name, Description: form.Description,
				RedirectURIs: strings.Fields(form.RedirectURIs), AuditLogsWrite: form.AuditLogsWrite}, msg, "", status)
		})
		return
	}
	p.renderClient(w, r, s, c, "", "", http.StatusOK)
}

func (p *Provider) rotateClient(w http.ResponseWriter, r *http.Request, s *session) {
	secret, err := p.RotateClientSecret(r.Context(), r.PathValue("id"))
	if err == nil {
		var c Client
		if c, err = p.Client(r.Context(), r.PathValue("id")); err == nil {
			p.renderClient(w, r, s, c, "", secret, http.StatusOK)
			return
		}
	}
	p.failPage(w, r, http.StatusNotFound, "Client not found", "There is no such confidential client in your organization.")
}

func (p *Provider) deleteClient(w http.ResponseWriter, r *http.Request, s *session) {
	if err := p.DeleteClient(r.Context(), r.PathValue("id")); err != nil {
		p.failPage(w, r, http.StatusNotFound, "Client not found", "There is no such client in your organization.")
		return
	}
	http.Redirect(w, r, "/developer?notice="+url.QueryEscape("client-delete"), http.StatusSeeOther)
}
