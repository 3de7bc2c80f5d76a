package assessment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/webhooks/event"
	"github.com/assessd/assessd/tenancy"
)

// submission is what SubmitResult reads before it scores.
type submission struct {
	questions []Question
	// region is the organization's aiRegion now, recorded with the result.
	region string
	// webhooks are the event types the organization's endpoints receive.
	webhooks event.Subscriptions
	// paperVersion is the exam's paper_version, read before its questions
	// (so questions newer than it are possible, older ones are not).
	paperVersion int64
	// cached says the submission came from the paper cache: its write
	// first checks that all of the above is still current (checkCurrent).
	cached bool
}

// papers keeps recently read submissions per organization and exam, so
// that a submission to an exam many students take costs one round trip
// (decision 0132). An entry is never trusted: the write it is used for
// checks, in its own transaction, that the exam's paper version, the
// region and the webhook subscriptions are what the entry says and that
// the user exists, and SubmitResult reads afresh and scores again when
// they are not. Only papers of built-in question types are kept, since a
// custom type can change without the exam's paper version changing.
type papers struct {
	lru *expirable.LRU[paperKey, *paper]
	// bytes is the prompt and config bytes the entries hold.
	bytes atomic.Int64
}

type paperKey struct{ org, exam string }

// paper is a cached submission and the prompt and config bytes it holds.
type paper struct {
	sub  submission
	size int64
}

// The cache's bounds: entries, their lifetime, the most prompt and config
// bytes one entry may hold, and all of them together (decision 0173): a
// large exam is cached too, and the cache holds at most about 64 MiB.
const (
	paperCacheSize  = 256
	paperCacheTTL   = 10 * time.Minute
	paperEntryBytes = 4 << 20
	paperCacheBytes = 64 << 20
)

func newPapers() *papers {
	p := &papers{}
	p.lru = expirable.NewLRU[paperKey, *paper](paperCacheSize, func(_ paperKey, e *paper) { p.bytes.Add(-e.size) }, paperCacheTTL)
	return p
}

func (p *papers) get(org, exam string) (submission, bool) {
	e, ok := p.lru.Get(paperKey{org, exam})
	if !ok {
		return submission{}, false
	}
	out := e.sub
	out.cached = true
	return out, true
}

// add keeps sub unless a question has a custom type or the paper is
// larger than paperEntryBytes, and then drops the oldest entries until
// the cache holds at most paperCacheBytes.
func (p *papers) add(org, exam string, sub submission) {
	var size int64
	for _, q := range sub.questions {
		if q.Def == nil || !q.Def.BuiltIn {
			return
		}
		config, _ := json.Marshal(q.Config)
		size += int64(len(q.Prompt) + len(config))
	}
	if size > paperEntryBytes {
		return
	}
	key := paperKey{org, exam}
	p.lru.Remove(key) // its bytes leave through the eviction callback
	p.lru.Add(key, &paper{sub: sub, size: size})
	p.bytes.Add(size)
	for p.bytes.Load() > paperCacheBytes {
		if _, _, ok := p.lru.RemoveOldest(); !ok {
			return
		}
	}
}

// paperChangedCode is the SQLSTATE submission_current raises.
const paperChangedCode = "AS001"

// paperChanged reports whether err is submission_current's refusal.
func paperChanged(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == paperChangedCode
}

// queueCheckCurrent adds to b, when sub came from the cache, the check that
// it is still current for userID; b must be the write's batch, so that a
// refusal undoes the write. Without a recorder the subscriptions were not
// read and are not checked.
func (s *Service) queueCheckCurrent(b *pgx.Batch, examID, userID string, sub submission) {
	if !sub.cached {
		return
	}
	var events []string
	if s.Events != nil {
		events = make([]string, len(sub.webhooks))
		for i, t := range sub.webhooks {
			events[i] = string(t)
		}
	}
	b.Queue(`SELECT submission_current($1, $2, $3, $4, $5)`, examID, sub.paperVersion, userID, sub.region, events)
}

// submission returns what SubmitResult scores with: from the paper cache
// when fresh is false and it holds the exam, otherwise read. Inside a
// caller's transaction the cache is neither used nor filled: a refused
// check would abort that transaction, and what it reads may be its own
// uncommitted writes, whose paper version a rollback frees for reuse.
func (s *Service) submission(ctx context.Context, examID, userID string, fresh bool) (submission, error) {
	if store.InTx(ctx) {
		return s.loadSubmission(ctx, examID, userID)
	}
	org, _ := store.OrgID(ctx)
	if !fresh {
		if sub, ok := s.papers.get(org, examID); ok {
			return sub, nil
		}
	}
	sub, err := s.loadSubmission(ctx, examID, userID)
	if err == nil {
		s.papers.add(org, examID, sub)
	}
	return sub, err
}

// errUnknownUser refuses a submission for a user the organization does
// not have (any more).
var errUnknownUser = errs.Invalid("userId", "names no user of this organization")

// loadSubmission reads, in one batch, whether the exam and the user exist,
// the exam's paper version, the organization's AI region, the exam's
// questions with their types, and the event types its webhook endpoints
// receive.
func (s *Service) loadSubmission(ctx context.Context, examID, userID string) (submission, error) {
	var (
		sub       submission
		version   *int64
		userKnown bool
		defs      []TypeDef
	)
	b := &pgx.Batch{}
	// Read before the questions, in a statement of its own: a change
	// committed in between leaves the version older than the questions,
	// which the check refuses, never newer.
	b.Queue(`SELECT (SELECT paper_version FROM exams WHERE org_id = app_org_id() AND id = $1), `+tenancy.AIRegionSQL, examID).
		QueryRow(func(row pgx.Row) error { return row.Scan(&version, &sub.region) })
	tenancy.QueueUserExists(b, userID, &userKnown)
	b.Queue(`SELECT `+questionColumns+` FROM questions WHERE org_id = app_org_id() AND exam_id = $1
		 ORDER BY position LIMIT $2`, examID, MaxQuestions).
		Query(func(rows pgx.Rows) (err error) {
			sub.questions, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Question, error) { return scanQuestion(r) })
			return err
		})
	// The custom types as this organization sees them, as resolve reads them.
	b.Queue(`SELECT `+typeColumns+` FROM question_types t
		 WHERE t.id IN (SELECT type_id FROM questions WHERE org_id = app_org_id() AND exam_id = $1)`, examID).
		Query(func(rows pgx.Rows) (err error) {
			defs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (TypeDef, error) { return scanTypeDef(r) })
			return err
		})
	s.Events.QueueSubscriptions(b, &sub.webhooks)
	if err := s.db.SendBatch(ctx, b); err != nil {
		return submission{}, fmt.Errorf("submit result: %w", err)
	}
	switch {
	case version == nil:
		return submission{}, errs.NotFound("exam")
	case !userKnown:
		return submission{}, errUnknownUser
	}
	sub.paperVersion = *version
	resolveBuiltins(sub.questions)
	resolveCustom(sub.questions, defs)
	return sub, nil
}
