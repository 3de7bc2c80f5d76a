// Package account serves the signed-in user's account page: the profile,
// API keys, the apps connected to the account, and for owners and admins
// the apps their organization allowed extra scopes.
package account

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/assessd/assessd/internal/identity"
	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/web"
	"github.com/assessd/assessd/tenancy"
)

// Pages are the account pages.
type Pages struct {
	provider *identity.Provider
	tenancy  *tenancy.Service
	clients  *clients.Service
}

// New returns the account pages of the provider's signed-in users.
func New(provider *identity.Provider, ten *tenancy.Service, oauthClients *clients.Service) *Pages {
	return &Pages{provider: provider, tenancy: ten, clients: oauthClients}
}

// Routes registers the account pages on mux.
func (p *Pages) Routes(mux *http.ServeMux) {
	r := web.TextRoutes{Mux: mux}
	r.HandleFunc("GET /account", p.provider.SignedIn(p.accountPage))
	r.HandleFunc("POST /account/profile", p.provider.SignedIn(p.updateProfile))
	r.HandleFunc("POST /account/api-keys", p.provider.SignedIn(p.createKey))
	r.HandleFunc("POST /account/api-keys/{id}/revoke", p.provider.SignedIn(p.revokeKey))
	r.HandleFunc("POST /account/apps/{client}/revoke", p.provider.SignedIn(p.revokeApp))
	r.HandleFunc("POST /account/allowed-apps", p.provider.SignedIn(p.allowApp))
	r.HandleFunc("POST /account/allowed-apps/{client}/remove", p.provider.SignedIn(p.removeAllowedApp))
}

// notices are the fixed messages a redirect may ask the page to show.
var notices = map[string]string{
	"saved":       "Saved.",
	"key-revoked": "The API key was revoked.",
	"app-revoked": "The app's access was revoked; its tokens no longer work.",
	"app-allowed": "The app may now write to your organization's audit log.",
	"app-removed": "The app may no longer write to your organization's audit log.",
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
	AllowedApps []clients.AllowedClient
}

func day(t time.Time) string { return t.UTC().Format("2006-01-02") }

func (p *Pages) renderAccount(w http.ResponseWriter, r *http.Request, s *identity.Session, v accountView, status int) {
	ctx := r.Context()
	me, err := p.tenancy.Me(ctx)
	if errs.Is(err, errs.KindNotFound) { // deleted while this request ran
		p.provider.UserGone(w, r, s)
		return
	}
	if err != nil {
		web.FailedPage(w, r, err, "Your account is unavailable right now.")
		return
	}
	keys, err := p.tenancy.ListAPIKeys(ctx, s.UserID)
	if err == nil {
		v.Apps, err = p.connectedApps(ctx, s.UserID)
	}
	if _, denied := tenancy.Authorize(ctx, clients.ReadAllowedClients); err == nil && denied == nil {
		v.ManagesApps = true
		v.AllowedApps, _, err = p.clients.AllowedClients(ctx, paging.Page{Size: paging.MaxSize})
	}
	if err != nil {
		web.FailedPage(w, r, err, "Your account is unavailable right now.")
		return
	}
	v.CSRF, v.Name, v.Email, v.Role = s.CSRF, me.Name, me.Email, string(me.Role)
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

func (p *Pages) accountPage(w http.ResponseWriter, r *http.Request, s *identity.Session) {
	p.renderAccount(w, r, s, accountView{Notice: notices[r.URL.Query().Get("notice")]}, http.StatusOK)
}

func (p *Pages) updateProfile(w http.ResponseWriter, r *http.Request, s *identity.Session) {
	name := r.PostFormValue("name")
	if _, err := p.tenancy.UpdateMe(r.Context(), &name); err != nil {
		web.FormError(w, r, err, func(msg string, status int) { p.renderAccount(w, r, s, accountView{Error: msg}, status) })
		return
	}
	http.Redirect(w, r, "/account?notice=saved", http.StatusSeeOther)
}

// createKey shows the new key on the page itself, once; it never travels
// in a URL.
func (p *Pages) createKey(w http.ResponseWriter, r *http.Request, s *identity.Session) {
	_, plain, err := p.tenancy.CreateAPIKey(r.Context(), s.UserID, r.PostFormValue("name"))
	if err != nil {
		web.FormError(w, r, err, func(msg string, status int) { p.renderAccount(w, r, s, accountView{Error: msg}, status) })
		return
	}
	p.renderAccount(w, r, s, accountView{NewKey: plain}, http.StatusOK)
}

func (p *Pages) revokeKey(w http.ResponseWriter, r *http.Request, s *identity.Session) {
	if err := p.tenancy.RevokeAPIKey(r.Context(), r.PathValue("id")); err != nil {
		web.FormError(w, r, err, func(msg string, status int) { p.renderAccount(w, r, s, accountView{Error: msg}, status) })
		return
	}
	http.Redirect(w, r, "/account?notice=key-revoked", http.StatusSeeOther)
}

func (p *Pages) revokeApp(w http.ResponseWriter, r *http.Request, s *identity.Session) {
	if err := p.provider.RevokeApp(r.Context(), s.UserID, r.PathValue("client")); err != nil {
		web.FailedPage(w, r, err, "That did not work right now.")
		return
	}
	http.Redirect(w, r, "/account?notice=app-revoked", http.StatusSeeOther)
}

// allowApp lets the client named in the form write to the organization's
// audit log (owners and admins; AllowClient checks).
func (p *Pages) allowApp(w http.ResponseWriter, r *http.Request, s *identity.Session) {
	clientID := strings.TrimSpace(r.PostFormValue("clientId"))
	if _, err := p.clients.AllowClient(r.Context(), clientID, clients.AllowableScopes); err != nil {
		web.FormError(w, r, err, func(msg string, status int) {
			p.renderAccount(w, r, s, accountView{Error: "Client ID " + msg + "."}, status)
		})
		return
	}
	http.Redirect(w, r, "/account?notice=app-allowed", http.StatusSeeOther)
}

func (p *Pages) removeAllowedApp(w http.ResponseWriter, r *http.Request, s *identity.Session) {
	if err := p.clients.RemoveAllowedClient(r.Context(), r.PathValue("client")); err != nil {
		web.FormError(w, r, err, func(msg string, status int) { p.renderAccount(w, r, s, accountView{Error: msg}, status) })
		return
	}
	http.Redirect(w, r, "/account?notice=app-removed", http.StatusSeeOther)
}

// connectedApps lists the clients holding a live grant of userID.
func (p *Pages) connectedApps(ctx context.Context, userID string) ([]appRow, error) {
	apps, err := p.provider.ConnectedApps(ctx, userID)
	if err != nil {
		return nil, err
	}
	var out []appRow
	for _, a := range apps {
		out = append(out, appRow{ClientID: a.ClientID, Name: a.Name, Scopes: strings.Join(a.Scopes, " "), Since: day(a.Since)})
	}
	return out, nil
}
