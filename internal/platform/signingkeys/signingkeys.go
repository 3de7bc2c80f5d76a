// Package signingkeys keeps assessd's rotated RSA signing keys in
// PostgreSQL (table signing_keys, readable only by the application role),
// one ring per purpose: the OIDC provider's token keys, and the LTI tool's
// keys for its messages to platforms. Every process caches its ring and
// reads it again every minute, so a key another process created is
// published and used within a minute.
package signingkeys

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/store"
)

// Rotation: the newest key signs for Rotation, then a new key takes over;
// a retired key stays published for Grace, longer than anything it signed
// lives (id tokens and JWT access tokens: an hour; LTI messages and client
// assertions: minutes).
const (
	Rotation = 30 * 24 * time.Hour
	Grace    = 24 * time.Hour
	reload   = time.Minute
)

// The purposes of the rings.
const (
	PurposeOIDC = "oidc"
	PurposeLTI  = "lti"
)

// Key is one RS256 key of a ring.
type Key struct {
	ID        string
	Private   *rsa.PrivateKey
	CreatedAt time.Time
	// RetiredAt is when a newer key took over; nil while the key signs.
	RetiredAt *time.Time
}

// Ring is the keys of one purpose, newest first.
type Ring struct {
	db      *store.DB
	purpose string
	now     func() time.Time

	mu       sync.Mutex
	keys     []*Key
	loadedAt time.Time
}

// New returns the ring of purpose on db; now is its clock (nil:
// time.Now).
func New(db *store.DB, purpose string, now func() time.Time) *Ring {
	if now == nil {
		now = time.Now
	}
	return &Ring{db: db, purpose: purpose, now: now}
}

// Signing returns the key that signs now, creating the ring's first key or
// rotating when the newest is due.
func (r *Ring) Signing(ctx context.Context) (*Key, error) {
	keys, err := r.load(ctx)
	if err != nil {
		return nil, err
	}
	return keys[0], nil
}

// Published returns the keys whose signatures are still accepted: the
// signing key and those retired within Grace, newest first.
func (r *Ring) Published(ctx context.Context) ([]*Key, error) {
	return r.load(ctx)
}

// JWKS returns the published keys' public halves as a JSON Web Key Set
// (RFC 7517), each with its kid, "use": "sig" and "alg": "RS256".
func (r *Ring) JWKS(ctx context.Context) (jose.JSONWebKeySet, error) {
	keys, err := r.load(ctx)
	if err != nil {
		return jose.JSONWebKeySet{}, err
	}
	set := jose.JSONWebKeySet{Keys: make([]jose.JSONWebKey, len(keys))}
	for i, k := range keys {
		set.Keys[i] = jose.JSONWebKey{Key: &k.Private.PublicKey, KeyID: k.ID, Algorithm: string(jose.RS256), Use: "sig"}
	}
	return set, nil
}

func (r *Ring) load(ctx context.Context) ([]*Key, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if r.keys != nil && now.Sub(r.loadedAt) < reload {
		return r.keys, nil
	}
	keys, err := r.read(ctx, now)
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 || keys[0].RetiredAt != nil || now.Sub(keys[0].CreatedAt) > Rotation {
		if err := r.rotate(ctx, now); err != nil {
			return nil, err
		}
		if keys, err = r.read(ctx, now); err != nil {
			return nil, err
		}
	}
	r.keys, r.loadedAt = keys, now
	return keys, nil
}

func (r *Ring) read(ctx context.Context, now time.Time) ([]*Key, error) {
	rows, err := r.db.Unscoped().Query(ctx, `SELECT id, private_der, created_at, retired_at FROM signing_keys
		WHERE purpose = $1 AND (expires_at IS NULL OR expires_at > $2) ORDER BY created_at DESC`, r.purpose, now)
	if err != nil {
		return nil, fmt.Errorf("load %s signing keys: %w", r.purpose, err)
	}
	defer rows.Close()
	var keys []*Key
	for rows.Next() {
		var k Key
		var der []byte
		if err := rows.Scan(&k.ID, &der, &k.CreatedAt, &k.RetiredAt); err != nil {
			return nil, err
		}
		if k.Private, err = x509.ParsePKCS1PrivateKey(der); err != nil {
			return nil, fmt.Errorf("signing key %s: %w", k.ID, err)
		}
		keys = append(keys, &k)
	}
	return keys, rows.Err()
}

// rotate retires the ring's current keys and creates a new one.
func (r *Ring) rotate(ctx context.Context, now time.Time) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	q := r.db.Unscoped()
	if _, err := q.Exec(ctx, `UPDATE signing_keys SET retired_at = $1, expires_at = $2 WHERE purpose = $3 AND retired_at IS NULL`,
		now, now.Add(Grace), r.purpose); err != nil {
		return fmt.Errorf("retire %s signing keys: %w", r.purpose, err)
	}
	_, err = q.Exec(ctx, `INSERT INTO signing_keys (id, algorithm, private_der, created_at, purpose) VALUES ($1, 'RS256', $2, $3, $4)`,
		ids.New("sig_"), x509.MarshalPKCS1PrivateKey(key), now, r.purpose)
	return err
}
