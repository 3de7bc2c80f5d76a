// Package pages serves the developer area's learning platform page: an
// organization's LTI 1.3 platform registrations, managed under the API's
// rules by a signed-in owner or admin, beside the tool's configuration to
// paste on the platform.
package pages

import (
	"context"
	"net/http"
	"strings"

	"github.com/assessd/assessd/internal/identity"
	"github.com/assessd/assessd/internal/lti"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/web"
)

// LTIPlatforms is what the developer area needs to register the
// organization's learning platforms, with the caller's permissions (the
// API's rules), and the tool's configuration they show.
type LTIPlatforms interface {
	ListPlatforms(ctx context.Context, p paging.Page) ([]lti.Platform, string, error)
	Platform(ctx context.Context, id string) (lti.Platform, error)
	CreatePlatform(ctx context.Context, in lti.NewPlatform) (lti.Platform, error)
	UpdatePlatform(ctx context.Context, id string, p lti.PlatformPatch) (lti.Platform, error)
	DeletePlatform(ctx context.Context, id string) error
	Tool() lti.Tool
}

var _ LTIPlatforms = (*lti.Service)(nil)

// Pages are the learning platform pages.
type Pages struct {
	provider *identity.Provider
	lti      LTIPlatforms
}

// New returns the learning platform pages of the provider's signed-in
// users.
func New(provider *identity.Provider, platforms LTIPlatforms) *Pages {
	return &Pages{provider: provider, lti: platforms}
}

// notices are the fixed messages a redirect may ask the pages to show.
var notices = map[string]string{
	"saved":                "Saved.",
	"lti-platform-deleted": "The learning platform was removed; its launches are refused from now on.",
}

// Routes registers the developer area's LTI platform pages on mux, shaped
// like the webhook pages.
func (p *Pages) Routes(mux *http.ServeMux) {
	r := web.TextRoutes{Mux: mux}
	r.HandleFunc("GET /developer/lti", p.provider.SignedIn(p.ltiPlatformsPage))
	r.HandleFunc("POST /developer/lti", p.provider.SignedIn(p.createLTIPlatform))
	r.HandleFunc("GET /developer/lti/{id}", p.provider.SignedIn(p.ltiPlatformPage))
	r.HandleFunc("POST /developer/lti/{id}", p.provider.SignedIn(p.updateLTIPlatform))
	r.HandleFunc("POST /developer/lti/{id}/delete", p.provider.SignedIn(p.deleteLTIPlatform))
}

// ltiForm is the create and edit form of a registration: deployment ids
// one per line.
type ltiForm struct {
	CSRF, ID, Name, Issuer, ClientID, DeploymentIDs, AuthLoginURL, AccessTokenURL, JWKSURL string
}

func newLTIForm(csrf string, pl lti.Platform) ltiForm {
	return ltiForm{CSRF: csrf, ID: pl.ID, Name: pl.Name, Issuer: pl.Issuer, ClientID: pl.ClientID,
		DeploymentIDs: strings.Join(pl.DeploymentIDs, "\n"), AuthLoginURL: pl.AuthLoginURL, AccessTokenURL: pl.AccessTokenURL, JWKSURL: pl.JWKSURL}
}

// ltiInput reads the form as typed.
func ltiInput(r *http.Request, csrf string) ltiForm {
	return ltiForm{CSRF: csrf, Name: r.PostFormValue("name"), Issuer: strings.TrimSpace(r.PostFormValue("issuer")),
		ClientID: strings.TrimSpace(r.PostFormValue("clientId")), DeploymentIDs: r.PostFormValue("deploymentIds"),
		AuthLoginURL: strings.TrimSpace(r.PostFormValue("authLoginUrl")), AccessTokenURL: strings.TrimSpace(r.PostFormValue("accessTokenUrl")),
		JWKSURL: strings.TrimSpace(r.PostFormValue("jwksUrl"))}
}

// deployments are the form's deployment ids, one a line, blank lines
// skipped.
func (f ltiForm) deployments() []string {
	out := []string{}
	for _, line := range strings.Split(f.DeploymentIDs, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

type ltiPlatformsView struct {
	Notice, Error string
	Tool          lti.Tool
	Platforms     []lti.Platform
	Form          ltiForm
}

func (p *Pages) renderLTIPlatforms(w http.ResponseWriter, r *http.Request, s *identity.Session, v ltiPlatformsView, status int) {
	list, _, err := p.lti.ListPlatforms(r.Context(), paging.Page{Size: paging.MaxSize})
	if errs.Is(err, errs.KindForbidden) {
		web.FailPage(w, r, http.StatusForbidden, "Learning platforms", "Only owners and admins of your organization can register learning platforms.")
		return
	}
	if err != nil {
		web.FailedPage(w, r, err, "The developer area is unavailable right now.")
		return
	}
	v.Platforms, v.Tool = list, p.lti.Tool()
	if v.Form.CSRF == "" {
		v.Form = ltiForm{CSRF: s.CSRF}
	}
	web.Render(w, r, status, "lti-platforms.html", v)
}

func (p *Pages) ltiPlatformsPage(w http.ResponseWriter, r *http.Request, s *identity.Session) {
	p.renderLTIPlatforms(w, r, s, ltiPlatformsView{Notice: notices[r.URL.Query().Get("notice")]}, http.StatusOK)
}

func (p *Pages) createLTIPlatform(w http.ResponseWriter, r *http.Request, s *identity.Session) {
	f := ltiInput(r, s.CSRF)
	pl, err := p.lti.CreatePlatform(r.Context(), lti.NewPlatform{Name: f.Name, Issuer: f.Issuer, ClientID: f.ClientID,
		DeploymentIDs: f.deployments(), AuthLoginURL: f.AuthLoginURL, AccessTokenURL: f.AccessTokenURL, JWKSURL: f.JWKSURL})
	if err != nil {
		web.FormError(w, r, err, func(msg string, status int) {
			p.renderLTIPlatforms(w, r, s, ltiPlatformsView{Error: msg, Form: f}, status)
		})
		return
	}
	http.Redirect(w, r, "/developer/lti/"+pl.ID+"?notice=saved", http.StatusSeeOther)
}

func (p *Pages) renderLTIPlatform(w http.ResponseWriter, r *http.Request, f ltiForm, notice, errMsg string, status int) {
	web.Render(w, r, status, "lti-platform.html", map[string]any{"Form": f, "Tool": p.lti.Tool(), "Notice": notice, "Error": errMsg})
}

// notFoundLTIPlatform answers an id that is no registration of the
// organization.
func (p *Pages) notFoundLTIPlatform(w http.ResponseWriter, r *http.Request) {
	web.FailPage(w, r, http.StatusNotFound, "Platform not found", "There is no such learning platform in your organization.")
}

func (p *Pages) ltiPlatformPage(w http.ResponseWriter, r *http.Request, s *identity.Session) {
	pl, err := p.lti.Platform(r.Context(), r.PathValue("id"))
	if err != nil {
		p.notFoundLTIPlatform(w, r)
		return
	}
	p.renderLTIPlatform(w, r, newLTIForm(s.CSRF, pl), notices[r.URL.Query().Get("notice")], "", http.StatusOK)
}

func (p *Pages) updateLTIPlatform(w http.ResponseWriter, r *http.Request, s *identity.Session) {
	f := ltiInput(r, s.CSRF)
	f.ID = r.PathValue("id")
	deployments := f.deployments()
	pl, err := p.lti.UpdatePlatform(r.Context(), f.ID, lti.PlatformPatch{Name: &f.Name, Issuer: &f.Issuer, ClientID: &f.ClientID,
		DeploymentIDs: &deployments, AuthLoginURL: &f.AuthLoginURL, AccessTokenURL: &f.AccessTokenURL, JWKSURL: &f.JWKSURL})
	if errs.Is(err, errs.KindNotFound) {
		p.notFoundLTIPlatform(w, r)
		return
	}
	if err != nil {
		web.FormError(w, r, err, func(msg string, status int) { p.renderLTIPlatform(w, r, f, "", msg, status) })
		return
	}
	p.renderLTIPlatform(w, r, newLTIForm(s.CSRF, pl), notices["saved"], "", http.StatusOK)
}

func (p *Pages) deleteLTIPlatform(w http.ResponseWriter, r *http.Request, _ *identity.Session) {
	if err := p.lti.DeletePlatform(r.Context(), r.PathValue("id")); err != nil {
		p.notFoundLTIPlatform(w, r)
		return
	}
	http.Redirect(w, r, "/developer/lti?notice=lti-platform-deleted", http.StatusSeeOther)
}
