// Package audit stores the organization's append-only audit timeline.
// Authorization is the caller's concern (see tenancy.AuditLog); this
// package validates and persists entries inside the caller's transaction,
// so an audited change and its entry commit together.
package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
)

// Origins of an entry.
const (
	OriginPlatform = "platform" // written by assessd itself
	OriginApp      = "app"      // written by an OAuth app through the API
)

// Actor kinds.
const (
	ActorUser           = "user"
	ActorServiceAccount = "service_account"
	ActorSystem         = "system"
)

// Actor is who performed an action.
type Actor struct {
	Kind     string
	ID       string
	ClientID string
}

// Target is what an action was performed on.
type Target struct {
	Type string
	ID   string
}

// Entry is one audit log entry.
type Entry struct {
	ID        string
	Action    string
	Actor     Actor
	Target    Target
	Session   string
	Reason    string
	Before    map[string]any
	After     map[string]any
	Origin    string
	CreatedAt time.Time
}

// Field bounds of app-written entries.
const (
	maxActionLen = 100
	maxIDLen     = 200
	maxTextLen   = 1000
	maxSnapshot  = 64 << 10
)

var actionPattern = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`)

// Validate checks the fields an app supplies.
func (e *Entry) Validate() error {
	switch {
	case e.Action == "":
		return errs.Invalid("action", "is required")
	case len(e.Action) > maxActionLen || !actionPattern.MatchString(e.Action):
		return errs.Invalid("action", "must have the form resource.action in lowercase letters, digits and underscores (at most %d characters)", maxActionLen)
	case e.Target.Type == "":
		return errs.Invalid("target.type", "is required")
	case e.Target.ID == "":
		return errs.Invalid("target.id", "is required")
	case len(e.Target.Type) > maxIDLen:
		return errs.Invalid("target.type", "must be at most %d characters", maxIDLen)
	case len(e.Target.ID) > maxIDLen:
		return errs.Invalid("target.id", "must be at most %d characters", maxIDLen)
	case len(e.Session) > maxIDLen:
		return errs.Invalid("session", "must be at most %d characters", maxIDLen)
	case len(e.Reason) > maxTextLen:
		return errs.Invalid("reason", "must be at most %d characters", maxTextLen)
	}
	for field, snap := range map[string]map[string]any{"before": e.Before, "after": e.After} {
		if b, _ := json.Marshal(snap); len(b) > maxSnapshot {
			return errs.Invalid(field, "must be at most %d bytes of JSON", maxSnapshot)
		}
	}
	return nil
}

// Append writes e to the log of ctx's organization, through q so it joins
// the caller's transaction, and returns it with its id and time.
func Append(ctx context.Context, q store.Querier, e Entry) (Entry, error) {
	args, err := e.prepare(ctx)
	if err != nil {
		return Entry{}, err
	}
	if err := q.QueryRow(ctx, appendSQL, args...).Scan(&e.CreatedAt); err != nil {
		return Entry{}, fmt.Errorf("audit: append %s: %w", e.Action, err)
	}
	return e, nil
}

// Record writes e to the log of ctx's organization with the COMMIT of
// ctx's transaction (store.DB.SendAtCommit): the entry and the change it
// records take effect together, and it costs no round trip of its own
// (decision 0142). Outside a transaction it is written at once. Append is
// for the callers that read back the entry's time.
func Record(ctx context.Context, db *store.DB, e Entry) error {
	b := &pgx.Batch{}
	if err := Queue(ctx, b, e); err != nil {
		return err
	}
	return db.SendAtCommit(ctx, b)
}

// Queue adds e to b: it is written to the log of ctx's organization when b
// is sent (store.DB.SendBatch), together with the change it records.
func Queue(ctx context.Context, b *pgx.Batch, e Entry) error {
	args, err := e.prepare(ctx)
	if err != nil {
		return err
	}
	b.Queue(appendSQL, args...)
	return nil
}

const appendSQL = `
	INSERT INTO audit_logs (id, org_id, action, actor_kind, actor_id, actor_client_id,
	                        target_type, target_id, session, reason, before, after, origin)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12::jsonb, $13)
	RETURNING created_at`

// prepare gives e its id and default origin and returns the arguments of
// appendSQL.
func (e *Entry) prepare(ctx context.Context) ([]any, error) {
	org, ok := store.OrgID(ctx)
	if !ok {
		return nil, store.ErrNoTenant
	}
	e.ID = ids.New(ids.Audit)
	if e.Origin == "" {
		e.Origin = OriginPlatform
	}
	return []any{e.ID, org, e.Action, e.Actor.Kind, e.Actor.ID, e.Actor.ClientID,
		e.Target.Type, e.Target.ID, e.Session, e.Reason, store.JSON{V: e.Before}, store.JSON{V: e.After}, e.Origin}, nil
}

// Filter selects entries; zero fields match everything.
type Filter struct {
	Action     string
	ActorID    string
	TargetType string
	TargetID   string
	Since      time.Time
	Until      time.Time
}

func scanEntry(row pgx.Row) (Entry, error) {
	var e Entry
	err := row.Scan(&e.ID, &e.Action, &e.Actor.Kind, &e.Actor.ID, &e.Actor.ClientID,
		&e.Target.Type, &e.Target.ID, &e.Session, &e.Reason, &e.Before, &e.After,
		&e.Origin, &e.CreatedAt)
	return e, err
}

// List returns one page of ctx's organization's entries, newest first.
func List(ctx context.Context, q store.Querier, f Filter, p paging.Page) ([]Entry, string, error) {
	var since, until *time.Time
	if !f.Since.IsZero() {
		since = &f.Since
	}
	if !f.Until.IsZero() {
		until = &f.Until
	}
	entries, next, err := store.ListPage(ctx, q, p, scanEntry, func(e Entry) string { return e.ID }, `
		SELECT id, action, actor_kind, actor_id, actor_client_id, target_type, target_id,
		       session, reason, before, after, origin, created_at
		  FROM audit_logs
		 WHERE org_id = app_org_id()
		   AND ($1 = '' OR action = $1)
		   AND ($2 = '' OR actor_id = $2)
		   AND ($3 = '' OR target_type = $3)
		   AND ($4 = '' OR target_id = $4)
		   AND ($5::timestamptz IS NULL OR created_at >= $5)
		   AND ($6::timestamptz IS NULL OR created_at < $6)
		   AND ($7 = '' OR id < $7)
		 ORDER BY id DESC
		 LIMIT $8`,
		f.Action, f.ActorID, f.TargetType, f.TargetID, since, until, p.After, p.Limit())
	if err != nil {
		return nil, "", fmt.Errorf("audit: list: %w", err)
	}
	return entries, next, nil
}
