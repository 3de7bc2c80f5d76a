package tenancy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/store"
)

// An API key reads "ak_<key ulid>_<secret>": the ulid names the key row
// (id "key_<ulid>") and the secret is 256 random bits, stored only as its
// SHA-256 hash and compared in constant time.
const (
	apiKeyPrefix = "ak_"
	ulidLen      = 26
)

// APIKey describes a key without its secret.
type APIKey struct {
	ID         string
	UserID     string
	Name       string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// OrgOf returns the organization that owns a user or API key id. Operator
// commands use it to scope themselves.
func (s *Service) OrgOf(ctx context.Context, id string) (string, error) {
	var org *string
	if err := s.db.Unscoped().QueryRow(ctx, `SELECT org_of($1)`, id).Scan(&org); err != nil {
		return "", fmt.Errorf("org of %s: %w", id, err)
	}
	if org == nil {
		return "", errs.NotFound(resourceOf(id))
	}
	return *org, nil
}

func resourceOf(id string) string {
	if strings.HasPrefix(id, string(ids.APIKey)) {
		return "api key"
	}
	return "user"
}

// CreateAPIKey issues a key for userID and returns it with the plaintext
// key, which is never retrievable again. Callers may create keys for
// themselves; managing another user's keys needs users:write.
func (s *Service) CreateAPIKey(ctx context.Context, userID, name string) (APIKey, string, error) {
	caller, err := s.authorizeKeyOwner(ctx, userID)
	if err != nil {
		return APIKey{}, "", err
	}
	if name = strings.TrimSpace(name); name == "" {
		name = "API key"
	}
	if len(name) > 200 {
		return APIKey{}, "", errs.Invalid("name", "must be at most 200 characters")
	}
	id := ids.New(ids.APIKey)
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return APIKey{}, "", err
	}
	plain := apiKeyPrefix + strings.TrimPrefix(id, string(ids.APIKey)) + "_" + base64.RawURLEncoding.EncodeToString(secret)
	hash := sha256.Sum256([]byte(plain))
	k := APIKey{ID: id, UserID: userID, Name: name}
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		// Held until commit, so that a deletion of the user under way
		// makes this a missing user rather than a foreign key fault.
		if _, err := s.loadUser(ctx, q, userID, store.ForKeyShare); err != nil {
			return err
		}
		if err := checkKeyRoom(ctx, s.db, userID); err != nil {
			return err
		}
		if err := q.QueryRow(ctx, `
			INSERT INTO api_keys (id, org_id, user_id, name, secret_hash)
			VALUES ($1, app_org_id(), $2, $3, $4) RETURNING created_at`,
			id, userID, name, hash[:]).Scan(&k.CreatedAt); err != nil {
			return fmt.Errorf("create api key: %w", err)
		}
		err := audit.Record(ctx, s.db, audit.Entry{
			Action: "api_key.created", Actor: ActorOf(caller), Target: audit.Target{Type: "api_key", ID: id},
			After: map[string]any{"userId": userID, "name": name},
		})
		return err
	})
	if err != nil {
		return APIKey{}, "", err
	}
	return k, plain, nil
}

// MaxActiveKeys bounds a user's unrevoked API keys (decision 0159). An
// integration needs a key per system that calls as the user; beyond a
// handful, keys are forgotten rather than used, and each is a live secret.
const MaxActiveKeys = 20

// checkKeyRoom refuses a key beyond MaxActiveKeys, counting under the
// user's lock of key creations.
func checkKeyRoom(ctx context.Context, db *store.DB, userID string) error {
	n, err := db.CountLocked(ctx, "api_keys:"+userID,
		`SELECT count(*) FROM api_keys WHERE org_id = app_org_id() AND user_id = $1 AND revoked_at IS NULL`, userID)
	if err != nil {
		return err
	}
	if n >= MaxActiveKeys {
		return errs.Conflict("API_KEY_LIMIT", "a user has at most %d active API keys; revoke one to create another", MaxActiveKeys)
	}
	return nil
}

// RevokeAPIKey revokes key id at once.
func (s *Service) RevokeAPIKey(ctx context.Context, id string) error {
	if !ids.Valid(ids.APIKey, id) {
		return errs.Invalid("id", "must be an API key id (key_...)")
	}
	err := s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		var userID string
		err := q.QueryRow(ctx, `SELECT user_id FROM api_keys WHERE org_id = app_org_id() AND id = $1`, id).Scan(&userID)
		if isNoRows(err) {
			return errs.NotFound("api key")
		}
		if err != nil {
			return fmt.Errorf("revoke api key: %w", err)
		}
		caller, err := s.authorizeKeyOwner(ctx, userID)
		if err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `UPDATE api_keys SET revoked_at = now() WHERE org_id = app_org_id() AND id = $1 AND revoked_at IS NULL`, id); err != nil {
			return fmt.Errorf("revoke api key: %w", err)
		}
		if err := NotifyCredentialsChanged(ctx, s.db); err != nil {
			return err
		}
		err = audit.Record(ctx, s.db, audit.Entry{
			Action: "api_key.revoked", Actor: ActorOf(caller), Target: audit.Target{Type: "api_key", ID: id},
		})
		return err
	})
	if err == nil {
		s.creds.purge()
	}
	return err
}

// ListedRevokedKeys bounds the revoked keys ListAPIKeys returns: they
// stay in the table (an audit entry names each), but a list of every key
// a user ever revoked would grow without end.
const ListedRevokedKeys = 20

// ListAPIKeys returns the active keys of userID and the ListedRevokedKeys
// it revoked last, newest first.
func (s *Service) ListAPIKeys(ctx context.Context, userID string) ([]APIKey, error) {
	if _, err := s.authorizeKeyOwner(ctx, userID); err != nil {
		return nil, err
	}
	rows, err := s.db.Q(ctx).Query(ctx, `
		SELECT id, user_id, name, created_at, last_used_at, revoked_at FROM (
			SELECT * FROM api_keys WHERE org_id = app_org_id() AND user_id = $1 AND revoked_at IS NULL
			UNION ALL
			(SELECT * FROM api_keys WHERE org_id = app_org_id() AND user_id = $1 AND revoked_at IS NOT NULL
			  ORDER BY revoked_at DESC, id DESC LIMIT $2)) k
		 ORDER BY id DESC`, userID, ListedRevokedKeys)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	defer rows.Close()
	var keys []APIKey
	for rows.Next() {
		var k APIKey
		if err := rows.Scan(&k.ID, &k.UserID, &k.Name, &k.CreatedAt, &k.LastUsedAt, &k.RevokedAt); err != nil {
			return nil, fmt.Errorf("list api keys: %w", err)
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

// authorizeKeyOwner lets a user manage their own keys and a manager with
// users:write manage anyone's.
func (s *Service) authorizeKeyOwner(ctx context.Context, userID string) (*Caller, error) {
	c, ok := CallerFrom(ctx)
	if ok && c.UserID == userID && c.Kind != KindJWT {
		return c, nil
	}
	return Authorize(ctx, WriteUsers)
}

// APIKeyID returns the key id an API key names, without checking its
// secret, or "" when the token is not shaped like an API key. It only names
// the credential being tried, for failure limits.
func APIKeyID(token string) string {
	keyULID, _, ok := strings.Cut(strings.TrimPrefix(token, apiKeyPrefix), "_")
	keyID := string(ids.APIKey) + keyULID
	if !strings.HasPrefix(token, apiKeyPrefix) || !ok || len(keyULID) != ulidLen || !ids.Valid(ids.APIKey, keyID) {
		return ""
	}
	return keyID
}

// AuthenticateAPIKey resolves a bearer API key to its caller. Unknown,
// malformed and revoked keys are errs.KindUnauthenticated.
func (s *Service) AuthenticateAPIKey(ctx context.Context, token string) (*Caller, error) {
	hash := sha256.Sum256([]byte(token))
	e, ticket, ok := s.creds.get(hash)
	if ok {
		s.touch(e)
		return e.caller, nil
	}
	keyID := APIKeyID(token)
	if keyID == "" {
		return nil, errs.Unauthenticated("invalid API key")
	}
	var (
		c        = Caller{Kind: KindAPIKey, CredentialID: keyID}
		stored   []byte
		lastUsed *time.Time
	)
	err := s.db.Unscoped().QueryRow(ctx, `SELECT org_id, user_id, role, secret_hash, last_used_at FROM api_key_for_auth($1)`, keyID).
		Scan(&c.OrgID, &c.UserID, &c.Role, &stored, &lastUsed)
	if isNoRows(err) {
		return nil, errs.Unauthenticated("invalid or revoked API key")
	}
	if err != nil {
		return nil, errs.Unavailable("DATABASE_UNAVAILABLE", "cannot verify credentials right now").WithCause(err)
	}
	if subtle.ConstantTimeCompare(stored, hash[:]) != 1 {
		return nil, errs.Unauthenticated("invalid or revoked API key")
	}
	c.Scopes = APIKeyScopes(c.Role)
	e = &cachedCredential{caller: &c}
	if lastUsed != nil {
		e.lastUsed.Store(lastUsed.UnixNano())
	}
	s.creds.add(ticket, hash, e)
	s.touch(e)
	return &c, nil
}

// lastUsedResolution bounds how often a key's last-used time is recorded.
const lastUsedResolution = time.Minute

// touch notes that a key was used, at most once per lastUsedResolution, so
// a busy key costs nothing on most requests; FlushKeyUses writes the notes.
func (s *Service) touch(e *cachedCredential) {
	now := time.Now()
	prev := e.lastUsed.Load()
	if now.UnixNano()-prev < int64(lastUsedResolution) || !e.lastUsed.CompareAndSwap(prev, now.UnixNano()) {
		return
	}
	s.uses.add(e.caller.OrgID, e.caller.CredentialID, now)
}

// keyUses holds the uses of API keys not yet written, by organization and
// key, so authentication itself never writes.
type keyUses struct {
	mu    sync.Mutex
	byOrg map[string]map[string]time.Time
}

func (u *keyUses) add(org, keyID string, at time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.byOrg == nil {
		u.byOrg = map[string]map[string]time.Time{}
	}
	if u.byOrg[org] == nil {
		u.byOrg[org] = map[string]time.Time{}
	}
	if at.After(u.byOrg[org][keyID]) {
		u.byOrg[org][keyID] = at
	}
}

func (u *keyUses) take() map[string]map[string]time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	taken := u.byOrg
	u.byOrg = nil
	return taken
}

// FlushKeyUses writes the last-used times noted since the previous flush:
// one UPDATE per organization whose keys were used. Uses it could not
// write are kept for the next flush. App.Start runs it every few seconds
// and App.Close once more, after the server has drained.
func (s *Service) FlushKeyUses(ctx context.Context) error {
	var errsSeen []error
	for org, keys := range s.uses.take() {
		ids, times := make([]string, 0, len(keys)), make([]time.Time, 0, len(keys))
		for id, at := range keys {
			ids, times = append(ids, id), append(times, at)
		}
		octx := store.WithOrg(ctx, org)
		_, err := s.db.Q(octx).Exec(octx, `
			UPDATE api_keys k SET last_used_at = u.at
			  FROM unnest($1::text[], $2::timestamptz[]) AS u(id, at)
			 WHERE k.org_id = app_org_id() AND k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.at)`, ids, times)
		if err != nil {
			for id, at := range keys {
				s.uses.add(org, id, at)
			}
			errsSeen = append(errsSeen, fmt.Errorf("record API key use: %w", err))
		}
	}
	return errors.Join(errsSeen...)
}
