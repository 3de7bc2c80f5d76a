// Package outbox owns the workflow outbox: the row that says "this result
// must be graded" or "this generation must run", written in the same
// transaction as the result or the generation (decision 0045). A
// dispatcher (workflows.Dispatcher) turns pending rows into workflow starts
// and a reconciler re-arms rows whose workflow was lost, so a commit never
// depends on the workflow engine answering at that moment.
//
// Domain code only calls Add, inside its tenant transaction. Everything the
// dispatcher does spans tenants and goes through the narrow SECURITY
// DEFINER functions of migrations 005 to 039; the application role never
// bypasses row-level security. This package knows neither Temporal nor
// the subjects of its rows: when a subject is finished is its feature's
// answer, asked through the kind's workflows.Route (decision 0198).
package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/store"
)

// Kind names the workflow an outbox row asks for.
type Kind string

// The kinds of work the outbox carries.
const (
	KindGrading    Kind = "grading"
	KindGeneration Kind = "generation"
	// KindRegeneration is a question regeneration (decision 0091).
	KindRegeneration Kind = "regeneration"
	KindScanning     Kind = "scanning"
	// KindWebhook is a webhook event to deliver (decision 0105).
	KindWebhook Kind = "webhook"
	// KindAttempt is an attempt's deadline timer (issue 55): its workflow
	// runs while the attempt is in progress.
	KindAttempt Kind = "attempt"
	// KindLTIScore is a graded result's score to post to an LTI line item
	// (decision 0204).
	KindLTIScore Kind = "lti_score"
)

// Kinds are the kinds the outbox carries, each routed to its workflow in
// internal/app; Add refuses any other.
func Kinds() []Kind {
	return []Kind{KindGrading, KindGeneration, KindRegeneration, KindScanning, KindWebhook, KindAttempt, KindLTIScore}
}

// ErrUnknownKind is the error of a row of none of Kinds.
var ErrUnknownKind = errors.New("outbox: unknown kind")

func (k Kind) check() error {
	if !slices.Contains(Kinds(), k) {
		return fmt.Errorf("%w %q", ErrUnknownKind, string(k))
	}
	return nil
}

// Channel is notified on commit of every new or re-armed row, so
// dispatchers wake at once instead of at their next sweep.
const Channel = "assessd_outbox"

// Item is one outbox row: the subject (a result or generation id) of an
// organization, and the AI region whose task queue runs it.
type Item struct {
	Kind      Kind
	SubjectID string
	OrgID     string
	Region    string
	// Attempts counts the starts tried since the row became pending.
	Attempts int
	// Restarts counts how often the reconciler re-armed the row.
	Restarts int
	// Dispatched is when the row's workflow was last started, for a row
	// read by Unchecked.
	Dispatched time.Time
	// Answers are, for a claimed grading row, the question ids of the
	// result's answers awaiting AI grading, in exam order, read with the
	// claim (decision 0138); nil for other kinds and unclaimed rows.
	Answers []string
}

// Add writes the outbox row of subjectID in q, which must be the caller's
// tenant transaction: the row commits or rolls back with the subject. It
// also notifies Channel (delivered on commit). Adding the same subject
// twice keeps the first row. A kind that is none of Kinds is
// ErrUnknownKind, before anything is written.
func Add(ctx context.Context, q store.Querier, kind Kind, subjectID, region string) error {
	return add(ctx, q, kind, subjectID, region, false)
}

// Again is Add for a subject whose workflow already ran and must run once
// more (a corrected answer is graded again): the row counts as restarted,
// so the dispatcher starts the workflow anew even though its last run
// completed, and a row still there is armed again.
func Again(ctx context.Context, q store.Querier, kind Kind, subjectID, region string) error {
	return add(ctx, q, kind, subjectID, region, true)
}

func add(ctx context.Context, q store.Querier, kind Kind, subjectID, region string, again bool) error {
	if err := kind.check(); err != nil {
		return err
	}
	if _, err := q.Exec(ctx, addSQL, string(kind), subjectID, region, again); err != nil {
		return fmt.Errorf("outbox: add %s %s: %w", kind, subjectID, err)
	}
	return nil
}

// Queue is Add as a statement of b, sent with the writes it belongs to
// (store.DB.SendBatch).
func Queue(b *pgx.Batch, kind Kind, subjectID, region string) error {
	if err := kind.check(); err != nil {
		return err
	}
	b.Queue(addSQL, string(kind), subjectID, region, false)
	return nil
}

const addSQL = `SELECT outbox_add($1, $2, $3, $4)`

// Store is the dispatcher's cross-tenant access to the outbox.
type Store struct {
	db *store.DB
}

// NewStore returns a Store on db.
func NewStore(db *store.DB) *Store { return &Store{db: db} }

// Filter narrows what a dispatcher claims (decision 0130).
type Filter struct {
	// Region, when set, claims only that region's rows.
	Region string
	// Grace claims a row only once it has been due that long.
	Grace time.Duration
}

// Claim leases up to limit due rows that f admits for lease: no other
// dispatcher takes them until the lease ends, and a dispatcher that dies
// mid-way only delays them by lease.
func (s *Store) Claim(ctx context.Context, f Filter, limit int, lease time.Duration) ([]Item, error) {
	region := &f.Region
	if f.Region == "" {
		region = nil
	}
	rows, err := s.db.Unscoped().Query(ctx, `SELECT kind, subject_id, org_id, region, attempts, restarts, answers FROM outbox_claim($1, $2, $3, $4)`,
		limit, lease.Seconds(), region, f.Grace.Seconds())
	return collectItems(rows, err, func(it *Item) []any { return []any{&it.Answers} })
}

// Dispatched records that the items' workflows were started or joined, in
// one statement.
func (s *Store) Dispatched(ctx context.Context, items ...Item) error {
	kinds, subjects := make([]string, len(items)), make([]string, len(items))
	for i, it := range items {
		kinds[i], subjects[i] = string(it.Kind), it.SubjectID
	}
	return s.exec(ctx, `SELECT outbox_dispatched($1::text[], $2::text[])`, kinds, subjects)
}

// Retry makes it due again after delay, remembering why the start failed.
func (s *Store) Retry(ctx context.Context, it Item, reason string, delay time.Duration) error {
	return s.exec(ctx, `SELECT outbox_retry($1, $2, $3, $4)`, string(it.Kind), it.SubjectID, reason, delay.Seconds())
}

// Quiet says how long a dispatched row goes unchecked: Rows for most
// kinds, Sleepers for the kinds whose workflow sleeps for its subject's
// whole life (an attempt's deadline timer), which are also listed after
// the others.
type Quiet struct {
	Rows     time.Duration
	Sleepers time.Duration
	// SleeperKinds are those kinds.
	SleeperKinds []Kind
}

// Unchecked lists up to limit dispatched rows which nobody checked for as
// long as q says, the longest unchecked first, the sleepers' after all
// others. Whether their subjects are finished is for the caller to ask.
func (s *Store) Unchecked(ctx context.Context, q Quiet, limit int) ([]Item, error) {
	sleepers := make([]string, len(q.SleeperKinds))
	for i, k := range q.SleeperKinds {
		sleepers[i] = string(k)
	}
	rows, err := s.db.Unscoped().Query(ctx, `SELECT kind, subject_id, org_id, region, attempts, restarts, dispatched_at FROM outbox_unchecked($1, $2, $3, $4)`,
		q.Rows.Seconds(), limit, sleepers, q.Sleepers.Seconds())
	return collectItems(rows, err, func(it *Item) []any { return []any{&it.Dispatched} })
}

// Checked notes that its workflow is alive.
func (s *Store) Checked(ctx context.Context, it Item) error {
	return s.exec(ctx, `SELECT outbox_checked($1, $2)`, string(it.Kind), it.SubjectID)
}

// Rearm makes a dispatched row pending again and wakes the dispatchers.
func (s *Store) Rearm(ctx context.Context, it Item, reason string) error {
	return s.exec(ctx, `SELECT outbox_rearm($1, $2, $3)`, string(it.Kind), it.SubjectID, reason)
}

// Forget deletes the rows of items, read by Unchecked, whose subjects are
// finished, in one statement. A row re-armed or dispatched again since it
// was read (its subject must be processed again) is kept.
func (s *Store) Forget(ctx context.Context, items ...Item) error {
	kinds, subjects := make([]string, len(items)), make([]string, len(items))
	dispatched := make([]time.Time, len(items))
	for i, it := range items {
		kinds[i], subjects[i], dispatched[i] = string(it.Kind), it.SubjectID, it.Dispatched
	}
	return s.exec(ctx, `SELECT outbox_forget($1::text[], $2::text[], $3::timestamptz[])`, kinds, subjects, dispatched)
}

// Backlog is the pending part of the outbox for one kind.
type Backlog struct {
	Pending int
	// Oldest is the age of the oldest pending row.
	Oldest time.Duration
}

// Backlog returns the pending rows by kind; kinds without any are absent.
func (s *Store) Backlog(ctx context.Context) (map[Kind]Backlog, error) {
	rows, err := s.db.Unscoped().Query(ctx, `SELECT kind, pending, oldest_seconds FROM outbox_backlog()`)
	if err != nil {
		return nil, fmt.Errorf("outbox: backlog: %w", err)
	}
	defer rows.Close()
	out := map[Kind]Backlog{}
	for rows.Next() {
		var kind string
		var pending int
		var oldest float64
		if err := rows.Scan(&kind, &pending, &oldest); err != nil {
			return nil, fmt.Errorf("outbox: backlog: %w", err)
		}
		out[Kind(kind)] = Backlog{Pending: pending, Oldest: time.Duration(oldest * float64(time.Second))}
	}
	return out, rows.Err()
}

// Listen calls wake whenever rows may have become due: on every
// notification of Channel and each time the listener (re)connects, until
// ctx ends; failures are logged and the listener retries.
func (s *Store) Listen(ctx context.Context, wake func()) {
	s.db.Subscribe(ctx, store.Subscription{Channel: Channel, Up: wake, Notify: func(string) { wake() },
		Down: func(err error) { slog.WarnContext(ctx, "outbox listener interrupted; retrying", "err", err) }})
}

// collectItems scans rows of kind, subject_id, org_id, region, attempts
// and restarts, then the columns of more.
func collectItems(rows pgx.Rows, err error, more func(*Item) []any) ([]Item, error) {
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Item, error) {
		var it Item
		var kind string
		err := r.Scan(append([]any{&kind, &it.SubjectID, &it.OrgID, &it.Region, &it.Attempts, &it.Restarts}, more(&it)...)...)
		it.Kind = Kind(kind)
		return it, err
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	return items, nil
}

func (s *Store) exec(ctx context.Context, sql string, args ...any) error {
	if _, err := s.db.Unscoped().Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	return nil
}
