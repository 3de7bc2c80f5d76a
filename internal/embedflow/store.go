package embedflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/assessd/assessd/internal/platform/errs"
)

// ErrNotFound is an unknown or expired session.
var ErrNotFound = errors.New("embed session not found or expired")

// Store keeps sessions in Redis under keyPrefix with a TTL, so expiry needs
// no sweeping.
type Store struct {
	rdb *redis.Client
}

const keyPrefix = "assessd:embed:"

// NewStore returns a Store on rdb.
func NewStore(rdb *redis.Client) *Store { return &Store{rdb: rdb} }

// unavailable is the error of a Redis outage: a 503 that says what to do.
func unavailable(err error) error {
	return errs.Unavailable("EMBED_SESSIONS_UNAVAILABLE", "embed sessions are temporarily unavailable; retry in a moment").WithCause(err)
}

// Save stores s until s.ExpiresAt.
func (st *Store) Save(ctx context.Context, s Session) error {
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("embed: encode session: %w", err)
	}
	if err := st.rdb.Set(ctx, keyPrefix+s.ID, data, time.Until(s.ExpiresAt)).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}

// Get returns session id, ErrNotFound, or an unavailable error.
func (st *Store) Get(ctx context.Context, id string) (Session, error) {
	data, err := st.rdb.Get(ctx, keyPrefix+id).Bytes()
	if errors.Is(err, redis.Nil) {
		return Session{}, ErrNotFound
	}
	if err != nil {
		return Session{}, unavailable(err)
	}
	var s Session
	if err := json.Unmarshal(data, &s); err != nil {
		return Session{}, fmt.Errorf("embed: decode session: %w", err)
	}
	return s, nil
}

// Draft is a student's answers not yet submitted: the form values of the
// student-exam flow, saved as they are typed so that a reload or a dropped
// connection loses nothing.
type Draft struct {
	Answers url.Values `json:"answers,omitempty"`
	// StartedAt is when a timed exam was first opened: the timer runs
	// from it across reloads.
	StartedAt time.Time `json:"startedAt,omitzero"`
}

// Draft returns the session's draft (empty when none was saved).
func (st *Store) Draft(ctx context.Context, s Session) (Draft, error) {
	var d Draft
	data, err := st.rdb.Get(ctx, keyPrefix+"draft:"+s.ID).Bytes()
	if errors.Is(err, redis.Nil) {
		return d, nil
	}
	if err != nil {
		return d, unavailable(err)
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return d, fmt.Errorf("embed: decode draft: %w", err)
	}
	return d, nil
}

// Bounds of a draft. An answer is kept up to the size the API takes for an
// answer's value (64 KiB of JSON, assessment's maxValueBytes), measured in
// its text, which its JSON is never shorter than. The whole draft, which
// every request of the flow reads and every save writes back, is bounded
// as stored: each save may fill another question, so it grew by up to a
// page body a save (to about 500 MiB for an exam of 500 questions).
const (
	maxAnswerBytes = 64 << 10
	maxDraftBytes  = 1 << 20
)

// errTooLong refuses an answer or a draft past its bound; the draft
// stored is kept.
var errTooLong = errors.New("embed: answers too long to save")

// SaveDraft stores the session's draft for as long as the session lives,
// or refuses it with errTooLong when it is past maxDraftBytes.
func (st *Store) SaveDraft(ctx context.Context, s Session, d Draft) error {
	data, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("embed: encode draft: %w", err)
	}
	if len(data) > maxDraftBytes {
		return errTooLong
	}
	if err := st.rdb.Set(ctx, keyPrefix+"draft:"+s.ID, data, time.Until(s.ExpiresAt)).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}

// ClaimSubmit takes the session's one submission: true for the first
// caller only, so two tabs or a double click cannot submit twice. release
// gives the claim back when the submission failed.
func (st *Store) ClaimSubmit(ctx context.Context, s Session) (claimed bool, release func(), err error) {
	key := keyPrefix + "submit:" + s.ID
	ok, err := st.rdb.SetNX(ctx, key, "1", time.Until(s.ExpiresAt)).Result()
	if err != nil {
		return false, nil, unavailable(err)
	}
	return ok, func() { st.rdb.Del(context.WithoutCancel(ctx), key) }, nil
}

// Ping reports whether Redis answers (readiness).
func (st *Store) Ping(ctx context.Context) error { return st.rdb.Ping(ctx).Err() }
