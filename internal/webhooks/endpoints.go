// Package webhooks manages an organization's webhook endpoints and
// delivers the events internal/webhooks/event records: signed per
// Standard Webhooks, only to public addresses, every attempt kept
// (decisions 0105-0109). The delivery workflow (workflows/webhooks) calls
// Deliverer from the organization's region worker.
package webhooks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/platform/egress"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/webhooks/event"
	"github.com/assessd/assessd/tenancy"
)

// Endpoint is where an organization receives the events it subscribed to.
type Endpoint struct {
	ID          string
	URL         string
	Events      []event.Type
	Description string
	Enabled     bool
	// DisabledReason says why the platform disabled the endpoint.
	DisabledReason string
	// Secret is the signing secret ("whsec_..."), set only in the answer to
	// a creation or a rotation.
	Secret    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// NewEndpoint is the input of CreateEndpoint.
type NewEndpoint struct {
	URL         string
	Events      []string
	Description string
	// Enabled defaults to true.
	Enabled *bool
}

// EndpointPatch changes the fields that are set; Events replaces the list.
type EndpointPatch struct {
	URL         *string
	Events      []string
	Description *string
	Enabled     *bool
}

// RotationWindow is how long the previous secret keeps signing after a
// rotation, so receivers can switch without losing a delivery.
const RotationWindow = 24 * time.Hour

// maxDescription bounds an endpoint's description.
const maxDescription = 500

// Service is the webhook endpoints API.
type Service struct {
	db      *store.DB
	keys    *keyring
	targets egress.Targets
}

// NewService returns the endpoints API on db; targets decides which URLs
// are allowed.
func NewService(db *store.DB, targets egress.Targets) *Service {
	return &Service{db: db, keys: &keyring{db: db}, targets: targets}
}

const endpointColumns = `id, url, events, description, enabled, disabled_reason, created_at, updated_at`

func scanEndpoint(row pgx.Row) (Endpoint, error) {
	var e Endpoint
	var evs []string
	err := row.Scan(&e.ID, &e.URL, &evs, &e.Description, &e.Enabled, &e.DisabledReason, &e.CreatedAt, &e.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Endpoint{}, errs.NotFound("webhook endpoint")
	}
	e.Events = make([]event.Type, len(evs))
	for i, t := range evs {
		e.Events[i] = event.Type(t)
	}
	return e, err
}

// validEvents checks a subscription: at least one known type, each once.
func validEvents(in []string) ([]string, error) {
	if len(in) == 0 {
		return nil, errs.Invalid("events", "must name at least one event type")
	}
	out := make([]string, 0, len(in))
	for i, t := range in {
		if !event.Type(t).Valid() {
			return nil, errs.Invalid(fmt.Sprintf("events.%d", i), "must be an event type of the API reference")
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

func validDescription(d string) error {
	if len([]rune(d)) > maxDescription {
		return errs.Invalid("description", "must be at most %d characters", maxDescription)
	}
	return nil
}

func snapshot(e Endpoint) map[string]any {
	return map[string]any{"url": e.URL, "events": e.Events, "description": e.Description, "enabled": e.Enabled}
}

// ListEndpoints lists the organization's endpoints, oldest first.
func (s *Service) ListEndpoints(ctx context.Context, p paging.Page) ([]Endpoint, string, error) {
	if _, err := tenancy.Authorize(ctx, tenancy.ReadWebhooks); err != nil {
		return nil, "", err
	}
	list, next, err := store.ListPage(ctx, s.db.Q(ctx), p, scanEndpoint, func(e Endpoint) string { return e.ID }, `
		SELECT `+endpointColumns+` FROM webhook_endpoints
		 WHERE org_id = app_org_id() AND id > $1 ORDER BY id LIMIT $2`, p.After, p.Limit())
	if err != nil {
		return nil, "", fmt.Errorf("list webhook endpoints: %w", err)
	}
	return list, next, nil
}

// Endpoint returns one endpoint, without its secret.
func (s *Service) Endpoint(ctx context.Context, id string) (Endpoint, error) {
	if _, err := tenancy.Authorize(ctx, tenancy.ReadWebhooks); err != nil {
		return Endpoint{}, err
	}
	return s.load(ctx, s.db.Q(ctx), id, false)
}

func (s *Service) load(ctx context.Context, q store.Querier, id string, forUpdate bool) (Endpoint, error) {
	if !ids.Valid(ids.WebhookEndpoint, id) {
		return Endpoint{}, errs.NotFound("webhook endpoint")
	}
	lock := ""
	if forUpdate {
		lock = " FOR UPDATE"
	}
	e, err := scanEndpoint(q.QueryRow(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints WHERE org_id = app_org_id() AND id = $1`+lock, id))
	if err != nil && !errs.Is(err, errs.KindNotFound) {
		return Endpoint{}, fmt.Errorf("load webhook endpoint: %w", err)
	}
	return e, err
}

// MaxEndpoints bounds an organization's endpoints, enabled or not: every
// event is delivered to each endpoint subscribed to it, so the bound is
// the most deliveries one event can cost (decision 0157).
const MaxEndpoints = 20

// checkRoom refuses an endpoint beyond MaxEndpoints, counting under the
// organization's lock of endpoint creations.
func checkRoom(ctx context.Context, db *store.DB, org string) error {
	n, err := db.CountLocked(ctx, "webhook_endpoints:"+org, `SELECT count(*) FROM webhook_endpoints WHERE org_id = app_org_id()`)
	if err != nil {
		return err
	}
	if n >= MaxEndpoints {
		return errs.Conflict("ENDPOINT_LIMIT", "an organization has at most %d webhook endpoints; delete one to add another", MaxEndpoints)
	}
	return nil
}

// CreateEndpoint registers an endpoint and returns it with its signing
// secret, which is never shown again. Audited as webhook_endpoint.created.
func (s *Service) CreateEndpoint(ctx context.Context, in NewEndpoint) (Endpoint, error) {
	caller, err := tenancy.Authorize(ctx, tenancy.WriteWebhooks)
	if err != nil {
		return Endpoint{}, err
	}
	if err := s.targets.Check(ctx, "url", in.URL); err != nil {
		return Endpoint{}, err
	}
	evs, err := validEvents(in.Events)
	if err != nil {
		return Endpoint{}, err
	}
	if err := validDescription(in.Description); err != nil {
		return Endpoint{}, err
	}
	enabled := in.Enabled == nil || *in.Enabled
	sealer, err := s.keys.sealer(ctx)
	if err != nil {
		return Endpoint{}, err
	}
	id := ids.New(ids.WebhookEndpoint)
	key, secret := newKey()
	var e Endpoint
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		if err := checkRoom(ctx, s.db, caller.OrgID); err != nil {
			return err
		}
		e, err = scanEndpoint(q.QueryRow(ctx, `
			INSERT INTO webhook_endpoints (id, org_id, url, events, description, enabled, secret)
			VALUES ($1, app_org_id(), $2, $3, $4, $5, $6) RETURNING `+endpointColumns,
			id, in.URL, evs, in.Description, enabled, sealer.seal(id, key)))
		if err != nil {
			return fmt.Errorf("create webhook endpoint: %w", err)
		}
		return s.audit(ctx, q, caller, "webhook_endpoint.created", id, nil, snapshot(e))
	})
	e.Secret = secret
	return e, err
}

// UpdateEndpoint applies p. Enabling an endpoint clears the reason the
// platform disabled it. Audited as webhook_endpoint.updated.
func (s *Service) UpdateEndpoint(ctx context.Context, id string, p EndpointPatch) (Endpoint, error) {
	caller, err := tenancy.Authorize(ctx, tenancy.WriteWebhooks)
	if err != nil {
		return Endpoint{}, err
	}
	if p.URL != nil {
		if err := s.targets.Check(ctx, "url", *p.URL); err != nil {
			return Endpoint{}, err
		}
	}
	var evs []string
	if p.Events != nil {
		if evs, err = validEvents(p.Events); err != nil {
			return Endpoint{}, err
		}
	}
	if p.Description != nil {
		if err := validDescription(*p.Description); err != nil {
			return Endpoint{}, err
		}
	}
	var e Endpoint
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		before, err := s.load(ctx, q, id, true)
		if err != nil {
			return err
		}
		e, err = scanEndpoint(q.QueryRow(ctx, `
			UPDATE webhook_endpoints
			   SET url = coalesce($2, url), events = coalesce($3, events), description = coalesce($4, description),
			       enabled = coalesce($5, enabled),
			       disabled_reason = CASE WHEN coalesce($5, enabled) THEN '' ELSE disabled_reason END, updated_at = now()
			 WHERE org_id = app_org_id() AND id = $1 RETURNING `+endpointColumns,
			id, p.URL, evs, p.Description, p.Enabled))
		if err != nil {
			return fmt.Errorf("update webhook endpoint: %w", err)
		}
		return s.audit(ctx, q, caller, "webhook_endpoint.updated", id, snapshot(before), snapshot(e))
	})
	return e, err
}

// DeleteEndpoint removes an endpoint; its pending deliveries stop.
// Audited as webhook_endpoint.deleted.
func (s *Service) DeleteEndpoint(ctx context.Context, id string) error {
	caller, err := tenancy.Authorize(ctx, tenancy.WriteWebhooks)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		before, err := s.load(ctx, q, id, true)
		if err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `DELETE FROM webhook_endpoints WHERE org_id = app_org_id() AND id = $1`, id); err != nil {
			return fmt.Errorf("delete webhook endpoint: %w", err)
		}
		return s.audit(ctx, q, caller, "webhook_endpoint.deleted", id, snapshot(before), nil)
	})
}

// RotateSecret gives an endpoint a new signing secret and returns it, shown
// this once; the previous one keeps signing for RotationWindow. Audited as
// webhook_endpoint.secret_rotated.
func (s *Service) RotateSecret(ctx context.Context, id string) (Endpoint, error) {
	caller, err := tenancy.Authorize(ctx, tenancy.WriteWebhooks)
	if err != nil {
		return Endpoint{}, err
	}
	sealer, err := s.keys.sealer(ctx)
	if err != nil {
		return Endpoint{}, err
	}
	key, secret := newKey()
	var e Endpoint
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		if _, err := s.load(ctx, q, id, true); err != nil {
			return err
		}
		e, err = scanEndpoint(q.QueryRow(ctx, `
			UPDATE webhook_endpoints
			   SET previous_secret = secret, previous_until = now() + make_interval(secs => $3), secret = $2, updated_at = now()
			 WHERE org_id = app_org_id() AND id = $1 RETURNING `+endpointColumns,
			id, sealer.seal(id, key), RotationWindow.Seconds()))
		if err != nil {
			return fmt.Errorf("rotate webhook secret: %w", err)
		}
		return s.audit(ctx, q, caller, "webhook_endpoint.secret_rotated", id, nil,
			map[string]any{"previousValidUntil": time.Now().Add(RotationWindow).UTC().Format(time.RFC3339)})
	})
	e.Secret = secret
	return e, err
}

func (s *Service) audit(ctx context.Context, q store.Querier, caller *tenancy.Caller, action, id string, before, after map[string]any) error {
	err := audit.Record(ctx, s.db, audit.Entry{Action: action, Actor: tenancy.ActorOf(caller),
		Target: audit.Target{Type: "webhook_endpoint", ID: id}, Before: before, After: after})
	return err
}

// Delivery is one attempt to deliver an event to an endpoint.
type Delivery struct {
	ID         string
	EndpointID string
	EventID    string
	EventType  event.Type
	Attempt    int
	Succeeded  bool
	// ResponseCode is the receiver's HTTP status, 0 when none came.
	ResponseCode int
	Duration     time.Duration
	// ResponseExcerpt is the start of the receiver's answer (at most 1 KiB).
	ResponseExcerpt string
	// Error says why no usable answer came (timeout, refused address).
	Error     string
	CreatedAt time.Time
}

const deliveryColumns = `id, endpoint_id, event_id, event_type, attempt, succeeded, response_code, duration_ms, response_excerpt, error, created_at`

func scanDelivery(row pgx.Row) (Delivery, error) {
	var d Delivery
	var ms int64
	err := row.Scan(&d.ID, &d.EndpointID, &d.EventID, &d.EventType, &d.Attempt, &d.Succeeded, &d.ResponseCode, &ms,
		&d.ResponseExcerpt, &d.Error, &d.CreatedAt)
	d.Duration = time.Duration(ms) * time.Millisecond
	return d, err
}

// Deliveries lists an endpoint's delivery attempts, newest first.
func (s *Service) Deliveries(ctx context.Context, endpointID string, p paging.Page) ([]Delivery, string, error) {
	if _, err := tenancy.Authorize(ctx, tenancy.ReadWebhooks); err != nil {
		return nil, "", err
	}
	q := s.db.Q(ctx)
	if _, err := s.load(ctx, q, endpointID, false); err != nil {
		return nil, "", err
	}
	list, next, err := store.ListPage(ctx, q, p, scanDelivery, func(d Delivery) string { return d.ID }, `
		SELECT `+deliveryColumns+` FROM webhook_deliveries
		 WHERE org_id = app_org_id() AND endpoint_id = $1 AND ($2 = '' OR id < $2)
		 ORDER BY id DESC LIMIT $3`, endpointID, p.After, p.Limit())
	if err != nil {
		return nil, "", fmt.Errorf("list webhook deliveries: %w", err)
	}
	return list, next, nil
}

// Redeliver sends the event of a delivery to its endpoint once more, with
// the same webhook-id, through the outbox. Audited as
// webhook_endpoint.redelivery_requested.
func (s *Service) Redeliver(ctx context.Context, endpointID, deliveryID string) error {
	caller, err := tenancy.Authorize(ctx, tenancy.WriteWebhooks)
	if err != nil {
		return err
	}
	if !ids.Valid(ids.WebhookDelivery, deliveryID) {
		return errs.NotFound("webhook delivery")
	}
	return s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		e, err := s.load(ctx, q, endpointID, false)
		if err != nil {
			return err
		}
		if !e.Enabled {
			return errs.FailedPrecondition("ENDPOINT_DISABLED", "enable the endpoint before redelivering to it")
		}
		var eventID, region string
		err = q.QueryRow(ctx, `
			SELECT d.event_id, o.ai_region FROM webhook_deliveries d JOIN orgs o ON o.id = d.org_id
			 WHERE d.org_id = app_org_id() AND d.endpoint_id = $1 AND d.id = $2`, endpointID, deliveryID).Scan(&eventID, &region)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.NotFound("webhook delivery")
		}
		if err != nil {
			return fmt.Errorf("redeliver: %w", err)
		}
		if _, err := q.Exec(ctx, `
			UPDATE webhook_targets SET status = 'pending', updated_at = now()
			 WHERE org_id = app_org_id() AND event_id = $1 AND endpoint_id = $2`, eventID, endpointID); err != nil {
			return fmt.Errorf("redeliver: %w", err)
		}
		if err := outbox.Again(ctx, q, outbox.KindWebhook, eventID, region); err != nil {
			return err
		}
		return s.audit(ctx, q, caller, "webhook_endpoint.redelivery_requested", endpointID, nil,
			map[string]any{"deliveryId": deliveryID, "eventId": eventID})
	})
}
