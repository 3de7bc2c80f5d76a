// Package pages serves the developer area's webhook pages: an
// organization's endpoints, their secrets and deliveries, managed under the
// API's rules by a signed-in owner or admin.
package pages

import (
	"context"
	"net/http"
	"slices"

	"github.com/assessd/assessd/internal/identity"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/web"
	"github.com/assessd/assessd/internal/webhooks"
	"github.com/assessd/assessd/internal/webhooks/event"
)

// Webhooks is what the developer area needs to manage the organization's
// webhook endpoints, with the caller's permissions (the API's rules).
type Webhooks interface {
	ListEndpoints(ctx context.Context, p paging.Page) ([]webhooks.Endpoint, string, error)
	Endpoint(ctx context.Context, id string) (webhooks.Endpoint, error)
	CreateEndpoint(ctx context.Context, in webhooks.NewEndpoint) (webhooks.Endpoint, error)
	UpdateEndpoint(ctx context.Context, id string, p webhooks.EndpointPatch) (webhooks.Endpoint, error)
	DeleteEndpoint(ctx context.Context, id string) error
	RotateSecret(ctx context.Context, id string) (webhooks.Endpoint, error)
	Deliveries(ctx context.Context, endpointID string, p paging.Page) ([]webhooks.Delivery, string, error)
	Redeliver(ctx context.Context, endpointID, deliveryID string) error
}

var _ Webhooks = (*webhooks.Service)(nil)

// Pages are the webhook pages.
type Pages struct {
	provider *identity.Provider
	webhooks Webhooks
}

// New returns the webhook pages of the provider's signed-in users.
func New(provider *identity.Provider, hooks Webhooks) *Pages {
	return &Pages{provider: provider, webhooks: hooks}
}

// notices are the fixed messages a redirect may ask the pages to show.
var notices = map[string]string{"webhook-deleted": "The webhook endpoint was deleted; its pending deliveries stop."}

// Routes registers the developer area's webhook pages on mux, beside the
// OAuth clients and shaped like them.
func (p *Pages) Routes(mux *http.ServeMux) {
	r := web.TextRoutes{Mux: mux}
	r.HandleFunc("GET /developer/webhooks", p.provider.SignedIn(p.webhooksPage))
	r.HandleFunc("POST /developer/webhooks", p.provider.SignedIn(p.createWebhook))
	r.HandleFunc("GET /developer/webhooks/{id}", p.provider.SignedIn(p.webhookPage))
	r.HandleFunc("POST /developer/webhooks/{id}", p.provider.SignedIn(p.updateWebhook))
	r.HandleFunc("POST /developer/webhooks/{id}/rotate", p.provider.SignedIn(p.rotateWebhook))
	r.HandleFunc("POST /developer/webhooks/{id}/delete", p.provider.SignedIn(p.deleteWebhook))
	r.HandleFunc("POST /developer/webhooks/{id}/deliveries/{delivery}/redeliver", p.provider.SignedIn(p.redeliverWebhook))
}

// webhookForm is the create and edit form of an endpoint.
type webhookForm struct {
	CSRF, ID, URL, Description string
	Enabled                    bool
	Events                     []eventChoice
}

type eventChoice struct {
	Type    string
	Checked bool
}

func newWebhookForm(csrf string, e webhooks.Endpoint) webhookForm {
	f := webhookForm{CSRF: csrf, ID: e.ID, URL: e.URL, Description: e.Description, Enabled: e.Enabled}
	for _, t := range event.Types {
		f.Events = append(f.Events, eventChoice{Type: string(t), Checked: slices.Contains(e.Events, t)})
	}
	return f
}

// webhookInput reads the form: the endpoint as typed, and the events checked.
func webhookInput(r *http.Request) (webhooks.Endpoint, []string) {
	_ = r.ParseForm()
	evs := r.PostForm["events"]
	e := webhooks.Endpoint{URL: r.PostFormValue("url"), Description: r.PostFormValue("description"),
		Enabled: r.PostFormValue("enabled") == "1"}
	for _, t := range evs {
		e.Events = append(e.Events, event.Type(t))
	}
	return e, evs
}

type webhooksView struct {
	Notice, Error, Secret string
	Endpoints             []webhooks.Endpoint
	Created               *webhooks.Endpoint
	Form                  webhookForm
}

func (p *Pages) renderWebhooks(w http.ResponseWriter, r *http.Request, s *identity.Session, v webhooksView, status int) {
	list, _, err := p.webhooks.ListEndpoints(r.Context(), paging.Page{Size: paging.MaxSize})
	if errs.Is(err, errs.KindForbidden) {
		web.FailPage(w, r, http.StatusForbidden, "Webhooks", "Only owners and admins of your organization can manage webhooks.")
		return
	}
	if err != nil {
		web.FailedPage(w, r, err, "The developer area is unavailable right now.")
		return
	}
	v.Endpoints = list
	if v.Form.CSRF == "" {
		v.Form = newWebhookForm(s.CSRF, webhooks.Endpoint{Enabled: true})
	}
	web.Render(w, r, status, "webhooks.html", v)
}

func (p *Pages) webhooksPage(w http.ResponseWriter, r *http.Request, s *identity.Session) {
	p.renderWebhooks(w, r, s, webhooksView{Notice: notices[r.URL.Query().Get("notice")]}, http.StatusOK)
}

// createWebhook shows the new secret on the page itself, once.
func (p *Pages) createWebhook(w http.ResponseWriter, r *http.Request, s *identity.Session) {
	typed, evs := webhookInput(r)
	e, err := p.webhooks.CreateEndpoint(r.Context(), webhooks.NewEndpoint{URL: typed.URL, Events: evs, Description: typed.Description})
	if err != nil {
		web.FormError(w, r, err, func(msg string, status int) {
			p.renderWebhooks(w, r, s, webhooksView{Error: msg, Form: newWebhookForm(s.CSRF, typed)}, status)
		})
		return
	}
	p.renderWebhooks(w, r, s, webhooksView{Created: &e, Secret: e.Secret}, http.StatusOK)
}

func (p *Pages) renderWebhook(w http.ResponseWriter, r *http.Request, s *identity.Session, e webhooks.Endpoint, errMsg, secret string, status int) {
	deliveries, _, err := p.webhooks.Deliveries(r.Context(), e.ID, paging.Page{Size: 50})
	if err != nil {
		web.FailPage(w, r, http.StatusNotFound, "Endpoint not found", "There is no such webhook endpoint in your organization.")
		return
	}
	web.Render(w, r, status, "webhook.html", map[string]any{"Form": newWebhookForm(s.CSRF, e), "Endpoint": e, "Error": errMsg,
		"Secret": secret, "Deliveries": deliveries})
}

func (p *Pages) webhookPage(w http.ResponseWriter, r *http.Request, s *identity.Session) {
	e, err := p.webhooks.Endpoint(r.Context(), r.PathValue("id"))
	if err != nil {
		web.FailPage(w, r, http.StatusNotFound, "Endpoint not found", "There is no such webhook endpoint in your organization.")
		return
	}
	p.renderWebhook(w, r, s, e, "", "", http.StatusOK)
}

func (p *Pages) updateWebhook(w http.ResponseWriter, r *http.Request, s *identity.Session) {
	typed, evs := webhookInput(r)
	id := r.PathValue("id")
	// No box checked is an empty subscription, which is refused, not
	// "unchanged" (nil).
	if evs == nil {
		evs = []string{}
	}
	e, err := p.webhooks.UpdateEndpoint(r.Context(), id, webhooks.EndpointPatch{URL: &typed.URL, Events: evs,
		Description: &typed.Description, Enabled: &typed.Enabled})
	if err != nil {
		web.FormError(w, r, err, func(msg string, status int) {
			typed.ID = id
			p.renderWebhook(w, r, s, typed, msg, "", status)
		})
		return
	}
	p.renderWebhook(w, r, s, e, "", "", http.StatusOK)
}

func (p *Pages) rotateWebhook(w http.ResponseWriter, r *http.Request, s *identity.Session) {
	e, err := p.webhooks.RotateSecret(r.Context(), r.PathValue("id"))
	if err != nil {
		web.FailPage(w, r, http.StatusNotFound, "Endpoint not found", "There is no such webhook endpoint in your organization.")
		return
	}
	p.renderWebhook(w, r, s, e, "", e.Secret, http.StatusOK)
}

func (p *Pages) deleteWebhook(w http.ResponseWriter, r *http.Request, _ *identity.Session) {
	if err := p.webhooks.DeleteEndpoint(r.Context(), r.PathValue("id")); err != nil {
		web.FailPage(w, r, http.StatusNotFound, "Endpoint not found", "There is no such webhook endpoint in your organization.")
		return
	}
	http.Redirect(w, r, "/developer/webhooks?notice=webhook-deleted", http.StatusSeeOther)
}

func (p *Pages) redeliverWebhook(w http.ResponseWriter, r *http.Request, s *identity.Session) {
	id := r.PathValue("id")
	err := p.webhooks.Redeliver(r.Context(), id, r.PathValue("delivery"))
	if err != nil {
		web.FormError(w, r, err, func(msg string, status int) {
			e, lerr := p.webhooks.Endpoint(r.Context(), id)
			if lerr != nil {
				web.FailPage(w, r, http.StatusNotFound, "Endpoint not found", "There is no such webhook endpoint in your organization.")
				return
			}
			p.renderWebhook(w, r, s, e, msg, "", status)
		})
		return
	}
	http.Redirect(w, r, "/developer/webhooks/"+id, http.StatusSeeOther) //nolint:gosec // Redeliver found the endpoint: id is a whe_ ULID, a local path
}
