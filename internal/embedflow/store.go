package embedflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// Ping reports whether Redis answers (readiness).
func (st *Store) Ping(ctx context.Context) error { return st.rdb.Ping(ctx).Err() }
