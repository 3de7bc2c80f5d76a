package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/platform/egress"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/observability/promreg"
)

// Metrics are the delivery metrics: attempts by organization (bounded
// label), event type and outcome, and the attempts' latency by outcome.
type Metrics struct {
	orgs     observability.OrgLabeler
	attempts *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// Delivery outcomes, the outcome label.
const (
	OutcomeDelivered = "delivered" // the receiver answered 2xx
	OutcomeFailed    = "failed"    // any other answer, or none
)

// NewMetrics registers the delivery metrics on reg, shared by the region
// workers of one process; a nil reg leaves them unregistered.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	return &Metrics{
		attempts: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_webhook_deliveries_total", Help: "Webhook delivery attempts by organization, event type and outcome (delivered, failed).",
		}, []string{"org", "event", "outcome"})),
		// No org label on the histogram: a series per bucket per tenant.
		latency: promreg.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "assessd_webhook_delivery_duration_seconds", Help: "Webhook delivery attempt latency, request to answer, by outcome.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"outcome"})),
	}
}

// excerptLimit bounds what is kept of a receiver's answer.
const excerptLimit = 1024

// Deliverer sends events to endpoints; the delivery workflow's activities
// call it with ctx scoped to the event's organization.
type Deliverer struct {
	db      *store.DB
	keys    *keyring
	client  *http.Client
	metrics *Metrics
	now     func() time.Time
}

// NewDeliverer returns a Deliverer on db sending through targets' client.
func NewDeliverer(db *store.DB, targets egress.Targets, m *Metrics) *Deliverer {
	if m == nil {
		m = NewMetrics(nil)
	}
	return &Deliverer{db: db, keys: &keyring{db: db}, client: targets.Client(), metrics: m, now: time.Now}
}

// Pending returns the endpoints event id still has to reach.
func (d *Deliverer) Pending(ctx context.Context, eventID string) ([]string, error) {
	rows, err := d.db.Q(ctx).Query(ctx, `
		SELECT endpoint_id FROM webhook_targets
		 WHERE org_id = app_org_id() AND event_id = $1 AND status = 'pending' ORDER BY endpoint_id`, eventID)
	if err != nil {
		return nil, fmt.Errorf("pending webhook targets: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pending webhook targets: %w", err)
	}
	return out, nil
}

// ErrAttemptFailed is the error of an attempt the receiver did not
// accept; the workflow retries it.
var ErrAttemptFailed = errors.New("webhook delivery failed")

// message is what one attempt needs.
type message struct {
	orgID, eventType, payload, url string
	enabled, pending               bool
	secret, previous               []byte
	previousValid                  bool
}

// Attempt delivers event eventID to endpointID once and records the
// attempt (number attempt, from 1). It returns nil when the receiver
// accepted it or nothing is left to do (delivered already, the endpoint
// deleted or disabled), and an error wrapping ErrAttemptFailed otherwise.
func (d *Deliverer) Attempt(ctx context.Context, eventID, endpointID string, attempt int) error {
	q := d.db.Q(ctx)
	var m message
	err := q.QueryRow(ctx, `
		SELECT ev.org_id, ev.type, ev.payload, e.url, e.enabled, t.status = 'pending', e.secret, e.previous_secret,
		       coalesce(e.previous_until > now(), false)
		  FROM webhook_targets t
		  JOIN webhook_events ev ON ev.id = t.event_id
		  JOIN webhook_endpoints e ON e.id = t.endpoint_id
		 WHERE t.org_id = app_org_id() AND t.event_id = $1 AND t.endpoint_id = $2`, eventID, endpointID).
		Scan(&m.orgID, &m.eventType, &m.payload, &m.url, &m.enabled, &m.pending, &m.secret, &m.previous, &m.previousValid)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil // the endpoint was deleted, and its targets with it
	case err != nil:
		return fmt.Errorf("load webhook message: %w", err)
	case !m.pending:
		return nil
	case !m.enabled:
		return d.finish(ctx, eventID, endpointID, "failed")
	}
	keys, err := d.signingKeys(ctx, endpointID, m)
	if err != nil {
		return err
	}
	rec := d.send(ctx, m, eventID, keys)
	rec.ID, rec.EndpointID, rec.EventID, rec.Attempt = ids.New(ids.WebhookDelivery), endpointID, eventID, attempt
	outcome := OutcomeFailed
	if rec.Succeeded {
		outcome = OutcomeDelivered
	}
	d.metrics.attempts.WithLabelValues(d.metrics.orgs.Label(m.orgID), m.eventType, outcome).Inc()
	d.metrics.latency.WithLabelValues(outcome).Observe(rec.Duration.Seconds())
	gone := false
	err = d.db.Tx(ctx, func(ctx context.Context) error {
		q := d.db.Q(ctx)
		// The endpoint may have been deleted while the request was on the
		// wire: then there is nothing to record it against (its deliveries
		// and targets went with it), and nothing left to retry.
		tag, err := q.Exec(ctx, `
			INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, attempt, succeeded,
			                                response_code, duration_ms, response_excerpt, error)
			SELECT $1, e.org_id, e.id, $3, $4, $5::integer, $6::boolean, $7::integer, $8::integer, $9, $10
			  FROM webhook_endpoints e
			 WHERE e.org_id = app_org_id() AND e.id = $2
			   FOR KEY SHARE`,
			rec.ID, endpointID, eventID, m.eventType, attempt, rec.Succeeded, rec.ResponseCode, rec.Duration.Milliseconds(),
			rec.ResponseExcerpt, rec.Error)
		if err != nil {
			return fmt.Errorf("record webhook delivery: %w", err)
		}
		if gone = tag.RowsAffected() == 0; gone {
			return nil
		}
		if rec.Succeeded {
			return d.finish(ctx, eventID, endpointID, "delivered")
		}
		return nil
	})
	if err != nil || gone {
		return err
	}
	if !rec.Succeeded {
		reason := rec.Error
		if reason == "" {
			reason = fmt.Sprintf("the endpoint answered %d", rec.ResponseCode)
		}
		return fmt.Errorf("%w: %s", ErrAttemptFailed, reason)
	}
	return nil
}

// keys returns the keys that sign a message: the endpoint's, and the
// previous one while its rotation window lasts.
func (d *Deliverer) signingKeys(ctx context.Context, endpointID string, m message) ([][]byte, error) {
	sealer, err := d.keys.sealer(ctx)
	if err != nil {
		return nil, err
	}
	key, err := sealer.open(endpointID, m.secret)
	if err != nil {
		return nil, err
	}
	keys := [][]byte{key}
	if m.previous != nil && m.previousValid {
		prev, err := sealer.open(endpointID, m.previous)
		if err != nil {
			return nil, err
		}
		keys = append(keys, prev)
	}
	return keys, nil
}

// send posts the message and describes the attempt.
func (d *Deliverer) send(ctx context.Context, m message, eventID string, keys [][]byte) Delivery {
	body := []byte(m.payload)
	h := Sign(keys, eventID, d.now(), body)
	var rec Delivery
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url, bytes.NewReader(body))
	if err != nil {
		rec.Error = "the endpoint URL is not usable"
		return rec
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "assessd-webhooks/1")
	req.Header.Set("webhook-id", h.ID)
	req.Header.Set("webhook-timestamp", h.Timestamp)
	req.Header.Set("webhook-signature", h.Signature)
	start := time.Now()
	resp, err := d.client.Do(req) //nolint:gosec // the URL is the integrator's; egress checks every connected address
	if err != nil {
		rec.Duration = time.Since(start)
		rec.Error = describe(err)
		return rec
	}
	defer func() { _ = resp.Body.Close() }()
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, excerptLimit))
	rec.Duration = time.Since(start)
	rec.ResponseCode = resp.StatusCode
	// Kept as text: invalid UTF-8 and NUL, which PostgreSQL cannot store,
	// become U+FFFD, or the attempt could not be recorded at all.
	rec.ResponseExcerpt = strings.ReplaceAll(string(bytes.ToValidUTF8(excerpt, []byte("\uFFFD"))), "\x00", "\uFFFD")
	rec.Succeeded = resp.StatusCode >= 200 && resp.StatusCode < 300
	return rec
}

// describe is the client-safe reason a request got no answer.
func describe(err error) string {
	switch {
	case errors.Is(err, egress.ErrForbiddenAddress):
		return "the endpoint resolves to an address that is not allowed"
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return "the endpoint did not answer in time"
	}
	return "the endpoint could not be reached"
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

func (d *Deliverer) finish(ctx context.Context, eventID, endpointID, status string) error {
	if _, err := d.db.Q(ctx).Exec(ctx, `
		UPDATE webhook_targets SET status = $3, updated_at = now()
		 WHERE org_id = app_org_id() AND event_id = $1 AND endpoint_id = $2 AND status = 'pending'`,
		eventID, endpointID, status); err != nil {
		return fmt.Errorf("finish webhook target: %w", err)
	}
	return nil
}

// GiveUp ends the delivery of an event to an endpoint that kept failing
// for the whole retry window: the endpoint is disabled and the audit log
// tells the organization's owners why (webhook_endpoint.disabled).
func (d *Deliverer) GiveUp(ctx context.Context, eventID, endpointID, reason string) error {
	return d.db.Tx(ctx, func(ctx context.Context) error {
		q := d.db.Q(ctx)
		if err := d.finish(ctx, eventID, endpointID, "failed"); err != nil {
			return err
		}
		why := "deliveries failed for " + reason
		tag, err := q.Exec(ctx, `
			UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2, updated_at = now()
			 WHERE org_id = app_org_id() AND id = $1 AND enabled`, endpointID, why)
		if err != nil {
			return fmt.Errorf("disable webhook endpoint: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		err = audit.Record(ctx, d.db, audit.Entry{Action: "webhook_endpoint.disabled",
			Actor: audit.Actor{Kind: audit.ActorSystem, ID: "webhooks"}, Target: audit.Target{Type: "webhook_endpoint", ID: endpointID},
			Reason: why, After: map[string]any{"enabled": false, "eventId": eventID}})
		return err
	})
}

// Unfinished returns the outbox's unfinished function of webhook events:
// an event is unfinished while a delivery of it is pending.
func Unfinished(db *store.DB) func(ctx context.Context, eventIDs []string) ([]string, error) {
	return func(ctx context.Context, eventIDs []string) ([]string, error) {
		return store.Strings(ctx, db.Q(ctx), `
			SELECT DISTINCT event_id FROM webhook_targets
			 WHERE org_id = app_org_id() AND event_id = ANY($1) AND status = 'pending'`, eventIDs)
	}
}

// Abandon returns the outbox's abandon function of webhook events: when
// an event's workflow cannot run, its pending deliveries end as failed.
func Abandon(db *store.DB) func(ctx context.Context, eventID, reason string) error {
	return func(ctx context.Context, eventID, _ string) error {
		if _, err := db.Q(ctx).Exec(ctx, `
			UPDATE webhook_targets SET status = 'failed', updated_at = now()
			 WHERE org_id = app_org_id() AND event_id = $1 AND status = 'pending'`, eventID); err != nil {
			return fmt.Errorf("abandon webhook event: %w", err)
		}
		return nil
	}
}
