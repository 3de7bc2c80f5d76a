package identity

import (
	"context"
	"net/http"
	"slices"

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

// webhookRoutes registers the developer area's webhook pages, beside the
// OAuth clients and shaped like them.
func (p *Provider) webhookRoutes(mux textRoutes) {
	mux.HandleFunc("GET /developer/webhooks", p.signedIn(p.webhooksPage))
	mux.HandleFunc("POST /developer/webhooks", p.signedIn(p.createWebhook))
	mux.HandleFunc("GET /developer/webhooks/{id}", p.signedIn(p.webhookPage))
	mux.HandleFunc("POST /developer/webhooks/{id}", p.signedIn(p.updateWebhook))
	mux.HandleFunc("POST /developer/webhooks/{id}/rotate", p.signedIn(p.rotateWebhook))
	mux.HandleFunc("POST /developer/webhooks/{id}/delete", p.signedIn(p.deleteWebhook))
	mux.HandleFunc("POST /developer/webhooks/{id}/deliveries/{delivery}/redeliver", p.signedIn(p.redeliverWebhook))
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

func (p *Provider) renderWebhooks(w http.ResponseWriter, r *http.Request, s *session, v webhooksView, status int) {
	list, _, err := p.cfg.Webhooks.ListEndpoints(r.Context(), paging.Page{Size: paging.MaxSize})
	if errs.Is(err, errs.KindForbidden) {
		p.failPage(w, r, http.StatusForbidden, "Webhooks", "Only owners and admins of your organization can manage webhooks.")
		return
	}
	if err != nil {
		p.failedPage(w, r, err, "The developer area is unavailable right now.")
		return
	}
	v.Endpoints = list
	if v.Form.CSRF == "" {
		v.Form = newWebhookForm(s.csrf, webhooks.Endpoint{Enabled: true})
	}
	web.Render(w, r, status, "webhooks.html", v)
}

func (p *Provider) webhooksPage(w http.ResponseWriter, r *http.Request, s *session) {
	p.renderWebhooks(w, r, s, webhooksView{Notice: notices[r.URL.Query().Get("notice")]}, http.StatusOK)
}

// createWebhook shows the new secret on the page itself, once.
func (p *Provider) createWebhook(w http.ResponseWriter, r *http.Request, s *session) {
	typed, evs := webhookInput(r)
	e, err := p.cfg.Webhooks.CreateEndpoint(r.Context(), webhooks.NewEndpoint{URL: typed.URL, Events: evs, Description: typed.Description})
	if err != nil {
		p.pageError(w, r, err, func(msg string, status int) {
			p.renderWebhooks(w, r, s, webhooksView{Error: msg, Form: newWebhookForm(s.csrf, typed)}, status)
		})
		return
	}
	p.renderWebhooks(w, r, s, webhooksView{Created: &e, Secret: e.Secret}, http.StatusOK)
}

func (p *Provider) renderWebhook(w http.ResponseWriter, r *http.Request, s *session, e webhooks.Endpoint, errMsg, secret string, status int) {
	deliveries, _, err := p.cfg.Webhooks.Deliveries(r.Context(), e.ID, paging.Page{Size: 50})
	if err != nil {
		p.failPage(w, r, http.StatusNotFound, "Endpoint not found", "There is no such webhook endpoint in your organization.")
		return
	}
	web.Render(w, r, status, "webhook.html", map[string]any{"Form": newWebhookForm(s.csrf, e), "Endpoint": e, "Error": errMsg,
		"Secret": secret, "Deliveries": deliveries})
}

func (p *Provider) webhookPage(w http.ResponseWriter, r *http.Request, s *session) {
	e, err := p.cfg.Webhooks.Endpoint(r.Context(), r.PathValue("id"))
	if err != nil {
		p.failPage(w, r, http.StatusNotFound, "Endpoint not found", "There is no such webhook endpoint in your organization.")
		return
	}
	p.renderWebhook(w, r, s, e, "", "", http.StatusOK)
}

func (p *Provider) updateWebhook(w http.ResponseWriter, r *http.Request, s *session) {
	typed, evs := webhookInput(r)
	id := r.PathValue("id")
	// No box checked is an empty subscription, which is refused, not
	// "unchanged".
	e, err := p.cfg.Webhooks.UpdateEndpoint(r.Context(), id, webhooks.EndpointPatch{URL: &typed.URL, Events: nonNil(evs),
		Description: &typed.Description, Enabled: &typed.Enabled})
	if err != nil {
		p.pageError(w, r, err, func(msg string, status int) {
			typed.ID = id
			p.renderWebhook(w, r, s, typed, msg, "", status)
		})
		return
	}
	p.renderWebhook(w, r, s, e, "", "", http.StatusOK)
}

func (p *Provider) rotateWebhook(w http.ResponseWriter, r *http.Request, s *session) {
	e, err := p.cfg.Webhooks.RotateSecret(r.Context(), r.PathValue("id"))
	if err != nil {
		p.failPage(w, r, http.StatusNotFound, "Endpoint not found", "There is no such webhook endpoint in your organization.")
		return
	}
	p.renderWebhook(w, r, s, e, "", e.Secret, http.StatusOK)
}

func (p *Provider) deleteWebhook(w http.ResponseWriter, r *http.Request, _ *session) {
	if err := p.cfg.Webhooks.DeleteEndpoint(r.Context(), r.PathValue("id")); err != nil {
		p.failPage(w, r, http.StatusNotFound, "Endpoint not found", "There is no such webhook endpoint in your organization.")
		return
	}
	http.Redirect(w, r, "/developer/webhooks?notice=webhook-deleted", http.StatusSeeOther)
}

func (p *Provider) redeliverWebhook(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	err := p.cfg.Webhooks.Redeliver(r.Context(), id, r.PathValue("delivery"))
	if err != nil {
		p.pageError(w, r, err, func(msg string, status int) {
			e, lerr := p.cfg.Webhooks.Endpoint(r.Context(), id)
			if lerr != nil {
				p.failPage(w, r, http.StatusNotFound, "Endpoint not found", "There is no such webhook endpoint in your organization.")
				return
			}
			p.renderWebhook(w, r, s, e, msg, "", status)
		})
		return
	}
	http.Redirect(w, r, "/developer/webhooks/"+id, http.StatusSeeOther) //nolint:gosec // Redeliver found the endpoint: id is a whe_ ULID, a local path
}
