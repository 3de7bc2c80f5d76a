package clients

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/assessd/assessd/internal/identity"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/web"
)

// Routes registers the developer area's OAuth client pages on mux.
func (s *Service) Routes(mux *http.ServeMux) {
	r := web.TextRoutes{Mux: mux}
	r.HandleFunc("GET /developer", s.provider.SignedIn(s.developerPage))
	r.HandleFunc("POST /developer/clients", s.provider.SignedIn(s.createClient))
	r.HandleFunc("GET /developer/clients/{id}", s.provider.SignedIn(s.clientPage))
	r.HandleFunc("POST /developer/clients/{id}", s.provider.SignedIn(s.updateClient))
	r.HandleFunc("POST /developer/clients/{id}/rotate", s.provider.SignedIn(s.rotateClient))
	r.HandleFunc("POST /developer/clients/{id}/delete", s.provider.SignedIn(s.deleteClient))
}

// notices are the fixed messages a redirect may ask the page to show.
var notices = map[string]string{"client-delete": "The client was deleted."}

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

func (s *Service) renderDeveloper(w http.ResponseWriter, r *http.Request, sess *identity.Session, v developerView, status int) {
	list, err := s.Clients(r.Context())
	if errs.Is(err, errs.KindForbidden) {
		web.FailPage(w, r, http.StatusForbidden, "Manage OAuth Clients", "Only owners and admins of your organization can manage OAuth clients.")
		return
	}
	if err != nil {
		web.FailedPage(w, r, err, "The developer area is unavailable right now.")
		return
	}
	v.Clients = list
	v.Form.CSRF = sess.CSRF
	web.Render(w, r, status, "developer.html", v)
}

func (s *Service) developerPage(w http.ResponseWriter, r *http.Request, sess *identity.Session) {
	s.renderDeveloper(w, r, sess, developerView{Notice: notices[r.URL.Query().Get("notice")]}, http.StatusOK)
}

func formInput(r *http.Request) (ClientInput, clientForm) {
	f := clientForm{Name: r.PostFormValue("name"), Description: r.PostFormValue("description"),
		RedirectURIs: r.PostFormValue("redirectUris"), Public: r.PostFormValue("public") == "1",
		AuditLogsWrite: r.PostFormValue("auditLogsWrite") == "1"}
	in := ClientInput{Name: f.Name, Description: f.Description, RedirectURIs: strings.Fields(f.RedirectURIs),
		Public: f.Public, AllowAuditLogsWrite: f.AuditLogsWrite}
	return in, f
}

func (s *Service) createClient(w http.ResponseWriter, r *http.Request, sess *identity.Session) {
	in, form := formInput(r)
	c, secret, err := s.CreateClient(r.Context(), in)
	if err != nil {
		web.FormError(w, r, err, func(msg string, status int) {
			s.renderDeveloper(w, r, sess, developerView{Error: msg, Form: form}, status)
		})
		return
	}
	s.renderDeveloper(w, r, sess, developerView{Created: &c, Secret: secret}, http.StatusOK)
}

func (s *Service) renderClient(w http.ResponseWriter, r *http.Request, sess *identity.Session, c Client, errMsg, secret string, status int) {
	form := clientForm{CSRF: sess.CSRF, ID: c.ID, Name: c.Name, Description: c.Description,
		RedirectURIs: strings.Join(c.RedirectURIs, "\n"), Public: c.Public, AuditLogsWrite: c.AuditLogsWrite}
	web.Render(w, r, status, "client.html", map[string]any{"Form": form, "Error": errMsg, "Secret": secret})
}

func (s *Service) clientPage(w http.ResponseWriter, r *http.Request, sess *identity.Session) {
	c, err := s.Client(r.Context(), r.PathValue("id"))
	if err != nil {
		web.FailPage(w, r, http.StatusNotFound, "Client not found", "There is no such client in your organization.")
		return
	}
	s.renderClient(w, r, sess, c, "", "", http.StatusOK)
}

func (s *Service) updateClient(w http.ResponseWriter, r *http.Request, sess *identity.Session) {
	in, form := formInput(r)
	c, err := s.UpdateClient(r.Context(), r.PathValue("id"), in)
	if err != nil {
		web.FormError(w, r, err, func(msg string, status int) {
			form.ID = r.PathValue("id")
			s.renderClient(w, r, sess, Client{ID: form.ID, Name: form.Name, Description: form.Description,
				RedirectURIs: strings.Fields(form.RedirectURIs), AuditLogsWrite: form.AuditLogsWrite}, msg, "", status)
		})
		return
	}
	s.renderClient(w, r, sess, c, "", "", http.StatusOK)
}

func (s *Service) rotateClient(w http.ResponseWriter, r *http.Request, sess *identity.Session) {
	secret, err := s.RotateClientSecret(r.Context(), r.PathValue("id"))
	if err == nil {
		var c Client
		if c, err = s.Client(r.Context(), r.PathValue("id")); err == nil {
			s.renderClient(w, r, sess, c, "", secret, http.StatusOK)
			return
		}
	}
	web.FailPage(w, r, http.StatusNotFound, "Client not found", "There is no such confidential client in your organization.")
}

func (s *Service) deleteClient(w http.ResponseWriter, r *http.Request, _ *identity.Session) {
	if err := s.DeleteClient(r.Context(), r.PathValue("id")); err != nil {
		web.FailPage(w, r, http.StatusNotFound, "Client not found", "There is no such client in your organization.")
		return
	}
	http.Redirect(w, r, "/developer?notice="+url.QueryEscape("client-delete"), http.StatusSeeOther)
}
