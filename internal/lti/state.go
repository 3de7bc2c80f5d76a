package lti

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/assessd/assessd/internal/platform/errs"
)

// StateTTL is how long a login's state waits for its launch: the platform
// answers the authentication request at once, so minutes are plenty, and
// a state that lived longer would be a longer chance to replay.
const StateTTL = 5 * time.Minute

// stateKey prefixes the Redis keys of login states.
const stateKey = "assessd:lti:state:"

// loginState is what a login initiation left for its launch: the
// registration it was for and the nonce the id_token must carry. It is
// taken once, with GETDEL, so a state and its nonce serve one launch
// (decision 0200).
type loginState struct {
	OrgID      string `json:"orgId"`
	PlatformID string `json:"platformId"`
	Nonce      string `json:"nonce"`
}

// states keeps login states in Redis, with their TTL: nothing to sweep.
type states struct {
	rdb *redis.Client
}

// unavailable is the error of a Redis outage.
func unavailable(err error) error {
	return errs.Unavailable("LTI_UNAVAILABLE", "LTI launches are temporarily unavailable; launch again in a moment").WithCause(err)
}

// put stores a new state for st and returns its key, the state parameter
// the platform sends back.
func (s *states) put(ctx context.Context, st loginState) (string, error) {
	if s.rdb == nil {
		return "", unavailable(errors.New("no Redis configured"))
	}
	data, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("lti: encode state: %w", err)
	}
	key := rand.Text()
	if err := s.rdb.Set(ctx, stateKey+key, data, StateTTL).Err(); err != nil {
		return "", unavailable(err)
	}
	return key, nil
}

// take returns and removes state key; ok is false for a state that is
// unknown, expired or already taken.
func (s *states) take(ctx context.Context, key string) (st loginState, ok bool, err error) {
	if s.rdb == nil {
		return st, false, unavailable(errors.New("no Redis configured"))
	}
	data, err := s.rdb.GetDel(ctx, stateKey+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return st, false, nil
	}
	if err != nil {
		return st, false, unavailable(err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, false, fmt.Errorf("lti: decode state: %w", err)
	}
	return st, true, nil
}
