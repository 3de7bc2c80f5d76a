// Package event records webhook events: the message an integrator receives
// when something happens in its organization, written in the same
// transaction as the change it describes (decision 0105). Domain services
// hold a *Recorder; a nil one records nothing. Delivery is the job of
// internal/webhooks and the webhook workflow.
package event

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// Type is an event type of API.md.
type Type string

// The event types.
const (
	ResultGraded                  Type = "result.graded"
	ResultFailed                  Type = "result.failed"
	ExamGenerationCompleted       Type = "exam_generation.completed"
	ExamGenerationFailed          Type = "exam_generation.failed"
	AnswerSheetScanCompleted      Type = "answer_sheet_scan.completed"
	QuestionRegenerationCompleted Type = "question_regeneration.completed"
	UserCreated                   Type = "user.created"
	UserUpdated                   Type = "user.updated"
	UserDeleted                   Type = "user.deleted"
	AttemptStarted                Type = "attempt.started"
	AttemptSubmitted              Type = "attempt.submitted"
)

// Types lists every event type in documentation order.
var Types = []Type{ResultGraded, ResultFailed, ExamGenerationCompleted, ExamGenerationFailed,
	AnswerSheetScanCompleted, QuestionRegenerationCompleted, UserCreated, UserUpdated, UserDeleted,
	AttemptStarted, AttemptSubmitted}

// Valid reports whether t is an event type.
func (t Type) Valid() bool { return slices.Contains(Types, t) }

// Encoder renders a resource (a domain value such as tenancy.User) as the
// API returns it. The API package provides it, so a payload's data is
// byte for byte what GET on the resource answers.
type Encoder func(resource any) (json.RawMessage, error)

// Recorder writes events. The zero of *Recorder (nil) writes nothing, for
// services built without webhooks.
type Recorder struct {
	encode Encoder
	now    func() time.Time
}

// NewRecorder returns a Recorder encoding resources with encode.
func NewRecorder(encode Encoder) *Recorder {
	return &Recorder{encode: encode, now: time.Now}
}

// Payload is the body every delivery of an event carries (Standard
// Webhooks): its type, when it happened, and the resource.
type Payload struct {
	Type      Type            `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// message is the id and the exact body of a new event.
func (r *Recorder) message(t Type, resource any) (id, body string, err error) {
	data, err := r.encode(resource)
	if err != nil {
		return "", "", fmt.Errorf("event %s: %w", t, err)
	}
	b, err := json.Marshal(Payload{Type: t, Timestamp: r.now().UTC().Truncate(time.Millisecond), Data: data})
	if err != nil {
		return "", "", fmt.Errorf("event %s: %w", t, err)
	}
	return ids.New(ids.WebhookMessage), string(b), nil
}

const addSQL = `SELECT webhook_event_add($1, $2, $3)`

// Record writes event t about resource with the COMMIT of ctx's tenant
// transaction (store.DB.SendAtCommit): the event commits or rolls back with
// the change, and costs no round trip of its own. An organization without
// an endpoint subscribed to t gets no row.
func (r *Recorder) Record(ctx context.Context, db *store.DB, t Type, resource any) error {
	b := &pgx.Batch{}
	if err := r.Queue(b, t, resource); err != nil || len(b.QueuedQueries) == 0 {
		return err
	}
	return db.SendAtCommit(ctx, b)
}

// Queue is Record as a statement of b, sent with the writes it belongs to.
func (r *Recorder) Queue(b *pgx.Batch, t Type, resource any) error {
	if r == nil {
		return nil
	}
	id, body, err := r.message(t, resource)
	if err != nil {
		return err
	}
	b.Queue(addSQL, id, string(t), body)
	return nil
}

// userEvents are the event types of tenancy's user changes.
var userEvents = map[tenancy.UserChange]Type{
	tenancy.UserCreated: UserCreated,
	tenancy.UserUpdated: UserUpdated,
	tenancy.UserDeleted: UserDeleted,
}

// Users records tenancy's user changes (tenancy.Service.UserEvents) as
// their user.* events, each with its change's transaction as Record does.
func (r *Recorder) Users(db *store.DB) tenancy.UserEvents {
	return func(ctx context.Context, change tenancy.UserChange, u tenancy.User) error {
		t, ok := userEvents[change]
		if !ok {
			return fmt.Errorf("no webhook event for a user %s", change)
		}
		return r.Record(ctx, db, t, u)
	}
}

// Subscriptions are the event types an organization's enabled endpoints
// subscribe to, as read by QueueSubscriptions.
type Subscriptions []Type

// Has reports whether an endpoint subscribes to t.
func (s Subscriptions) Has(t Type) bool { return slices.Contains(s, t) }

// QueueSubscriptions queues in b a read of the event types the caller's
// organization's enabled endpoints subscribe to, into *into (left empty by
// a nil Recorder). A write that reads before it writes sends it with its
// reads and queues only events someone receives, since encoding a payload
// costs more than the read and most organizations have no endpoints. The
// event is still checked against the endpoints in the writing transaction;
// an endpoint created between the read and the write misses that change,
// as if it had been created just after it (decision 0127).
func (r *Recorder) QueueSubscriptions(b *pgx.Batch, into *Subscriptions) {
	if r == nil {
		return
	}
	b.Queue(`SELECT coalesce(array_agg(DISTINCT t), '{}') FROM webhook_endpoints, unnest(events) AS t
		 WHERE org_id = app_org_id() AND enabled`).
		QueryRow(func(row pgx.Row) error { return row.Scan(into) })
}
