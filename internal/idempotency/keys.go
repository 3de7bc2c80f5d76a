// Package idempotency makes a POST, PUT or PATCH sent with an Idempotency-Key
// header run once (decision 0178, after the IETF's Idempotency-Key header
// draft): a retry with the same key, from the same caller, for the same
// request and body, is answered the first one's response without running
// again, so a school's system that resends a submission after a lost
// answer never records the result twice.
package idempotency

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/assessd/assessd/internal/platform/repeat"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/observability/promreg"
)

const (
	// Retention is how long a key is remembered: a retry after it runs
	// the request again, as Stripe's keys do after 24 hours.
	Retention = 24 * time.Hour
	// Lease is how long a reservation lasts unless renewed. A running
	// request renews its own every Lease/4, however long its upload takes;
	// a key still reserved after its lease belonged to a process that died
	// mid-request. The next retry runs the request when it had written
	// nothing, and is answered IDEMPOTENCY_KEY_UNANSWERED otherwise.
	Lease = 2 * time.Minute
)

// Keys stores the keys and the responses they answer.
type Keys struct {
	db  *store.DB
	now func() time.Time
	// uses counts the keyed requests by organization and outcome.
	uses *prometheus.CounterVec
	org  func(id string) string
	// renewEvery is how often a running request renews its reservation.
	renewEvery time.Duration
}

// The outcome label values of assessd_idempotency_keys_total.
const (
	outcomeRun      = "run"      // the key was fresh: the request ran
	outcomeReplayed = "replayed" // the first response was answered again
	outcomeInUse    = "in_use"   // the first request was still running
	outcomeReused   = "reused"   // the key named another request
	// the first request changed data, then its process died unanswered
	outcomeUnanswered = "unanswered"
	outcomeInvalid    = "invalid" // the key was malformed
)

// New returns the keys stored in db, counted on reg with org labelling an
// organization (bounded cardinality, observability.Metrics.Org). now and
// reg may be nil.
func New(db *store.DB, now func() time.Time, reg prometheus.Registerer, org func(id string) string) *Keys {
	if now == nil {
		now = time.Now
	}
	if org == nil {
		org = func(id string) string { return id }
	}
	uses := promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "assessd_idempotency_keys_total",
		Help: "Requests sent with an Idempotency-Key, by organization and outcome (run, replayed, in_use, reused, unanswered, invalid).",
	}, []string{"org", "outcome"}))
	return &Keys{db: db, now: now, uses: uses, org: org, renewEvery: Lease / 4}
}

func (k *Keys) count(orgID, outcome string) { k.uses.WithLabelValues(k.org(orgID), outcome).Inc() }

// use is one use of a key, by a principal, for a request.
type use struct {
	principal, key, request string
}

// stored is what a key holds when its request did not take it fresh.
type stored struct {
	request     string
	bodyHash    []byte // nil until the first request finished
	status      int    // 0 while the first request runs
	contentType string
	response    []byte
	// unanswered: the first request changed data, and its reservation
	// ran out before it kept an answer: its process died.
	unanswered bool
}

// wroteSQL is the commit note (store.WithCommitNote) of a request that
// holds its key: every transaction of the request that wrote marks the key,
// atomically with the write, so a process that dies before it kept the
// answer leaves a key that is not run again.
const wroteSQL = `UPDATE idempotency_keys SET wrote = true
	 WHERE org_id = app_org_id() AND principal = $1 AND key = $2 AND status IS NULL AND NOT wrote
	   AND pg_current_xact_id_if_assigned() IS NOT NULL`

// noteWrites returns ctx whose transactions mark u's key when they write.
func noteWrites(ctx context.Context, u use) context.Context {
	return store.WithCommitNote(ctx, wroteSQL, u.principal, u.key)
}

// reserve takes the key for u's request, or returns what the key holds.
// A key past its retention, or reserved past its lease by a request that
// wrote nothing, is taken afresh.
func (k *Keys) reserve(ctx context.Context, u use) (fresh bool, s stored, err error) {
	now := k.now()
	// A reservation released between the two statements below leaves
	// nothing to read: take the key again, a few times at most.
	for range 3 {
		tag, err := k.db.Q(ctx).Exec(ctx, `
			INSERT INTO idempotency_keys (org_id, principal, key, request, created_at)
			VALUES (app_org_id(), $1, $2, $3, $4)
			ON CONFLICT (org_id, principal, key) DO UPDATE
			   SET request = EXCLUDED.request, created_at = EXCLUDED.created_at,
			       body_sha256 = NULL, status = NULL, content_type = '', response = NULL, wrote = false
			 WHERE idempotency_keys.created_at < $5
			    OR (idempotency_keys.status IS NULL AND NOT idempotency_keys.wrote AND idempotency_keys.created_at < $6)`,
			u.principal, u.key, u.request, now, now.Add(-Retention), now.Add(-Lease))
		if err != nil {
			return false, stored{}, fmt.Errorf("idempotency: reserve: %w", err)
		}
		if tag.RowsAffected() == 1 {
			return true, stored{}, nil
		}
		var status *int
		err = k.db.Q(ctx).QueryRow(ctx, `
			SELECT request, body_sha256, status, content_type, coalesce(response, ''),
			       status IS NULL AND wrote AND created_at < $3
			  FROM idempotency_keys WHERE org_id = app_org_id() AND principal = $1 AND key = $2`,
			u.principal, u.key, now.Add(-Lease)).Scan(&s.request, &s.bodyHash, &status, &s.contentType, &s.response, &s.unanswered)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return false, stored{}, fmt.Errorf("idempotency: read: %w", err)
		}
		if status != nil {
			s.status = *status
		}
		return false, s, nil
	}
	return false, stored{}, errors.New("idempotency: the key was released three times while read")
}

// complete stores the response of u's request; bodyHash is its body's.
func (k *Keys) complete(ctx context.Context, u use, bodyHash []byte, status int, contentType string, response *bytes.Buffer) error {
	_, err := k.db.Q(ctx).Exec(ctx, `
		UPDATE idempotency_keys SET body_sha256 = $3, status = $4, content_type = $5, response = $6
		 WHERE org_id = app_org_id() AND principal = $1 AND key = $2 AND status IS NULL`,
		u.principal, u.key, bodyHash, status, contentType, response.Bytes())
	if err != nil {
		return fmt.Errorf("idempotency: complete: %w", err)
	}
	return nil
}

// startLease starts the lease of u's reservation at from: now renews it
// for a request still running, a Lease ago ends it.
func (k *Keys) startLease(ctx context.Context, u use, from time.Time) error {
	_, err := k.db.Q(ctx).Exec(ctx, `
		UPDATE idempotency_keys SET created_at = $3
		 WHERE org_id = app_org_id() AND principal = $1 AND key = $2 AND status IS NULL`,
		u.principal, u.key, from)
	if err != nil {
		return fmt.Errorf("idempotency: lease: %w", err)
	}
	return nil
}

// keepReserved renews u's reservation every renewEvery until stop is
// called or ctx ends; stop returns once no renewal runs.
func (k *Keys) keepReserved(ctx context.Context, u use) (stop func()) {
	return repeat.Every(ctx, k.renewEvery, func() {
		if err := k.startLease(ctx, u, k.now()); err != nil && ctx.Err() == nil {
			// The next tick tries again; the lease leaves three.
			slog.WarnContext(ctx, "idempotency key not renewed", "err", err)
		}
	})
}

// release frees the key of u's request if it wrote nothing, so that a
// retry runs it again, and reports whether it did.
func (k *Keys) release(ctx context.Context, u use) (bool, error) {
	tag, err := k.db.Q(ctx).Exec(ctx, `
		DELETE FROM idempotency_keys
		 WHERE org_id = app_org_id() AND principal = $1 AND key = $2 AND status IS NULL AND NOT wrote`,
		u.principal, u.key)
	if err != nil {
		return false, fmt.Errorf("idempotency: release: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// abandon ends the lease of u's reservation now: its request wrote and
// then failed without an answer to keep (it panicked), which its retry is
// told at once rather than after the lease.
func (k *Keys) abandon(ctx context.Context, u use) error {
	return k.startLease(ctx, u, k.now().Add(-Lease-time.Second))
}

// Sweep deletes the keys past their retention, of every organization.
func (k *Keys) Sweep(ctx context.Context) error {
	_, err := k.db.SweepBefore(ctx, "sweep_idempotency_keys", k.now().Add(-Retention))
	return err
}
