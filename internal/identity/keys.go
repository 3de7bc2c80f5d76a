package identity

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/store"
)

// Signing key rotation: the newest key signs for keyRotation, then a new
// key takes over; a retired key stays in the JWKS for keyGrace, longer than
// any token it signed lives (id tokens and JWT access tokens: one hour).
const (
	keyRotation = 30 * 24 * time.Hour
	keyGrace    = 24 * time.Hour
	keyReload   = time.Minute
)

type signingKey struct {
	id        string
	key       *rsa.PrivateKey
	createdAt time.Time
	retiredAt *time.Time
}

func (k *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *signingKey) Key() any                                    { return k.key }
func (k *signingKey) ID() string                                  { return k.id }

type publicKey struct{ k *signingKey }

func (p publicKey) ID() string                         { return p.k.id }
func (p publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (p publicKey) Use() string                        { return "sig" }
func (p publicKey) Key() any                           { return &p.k.key.PublicKey }

// signingKeys keeps the provider's RSA keys in PostgreSQL (table
// signing_keys, readable only by the application role) and caches them.
type signingKeys struct {
	db  *store.DB
	now func() time.Time

	mu       sync.Mutex
	keys     []*signingKey // newest first
	loadedAt time.Time
}

func (s *signingKeys) load(ctx context.Context) ([]*signingKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.keys != nil && now.Sub(s.loadedAt) < keyReload {
		return s.keys, nil
	}
	keys, err := s.read(ctx, now)
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 || keys[0].retiredAt != nil || now.Sub(keys[0].createdAt) > keyRotation {
		if err := s.rotate(ctx, now); err != nil {
			return nil, err
		}
		if keys, err = s.read(ctx, now); err != nil {
			return nil, err
		}
	}
	s.keys, s.loadedAt = keys, now
	return keys, nil
}

func (s *signingKeys) read(ctx context.Context, now time.Time) ([]*signingKey, error) {
	rows, err := s.db.Unscoped().Query(ctx, `SELECT id, private_der, created_at, retired_at FROM signing_keys
		WHERE expires_at IS NULL OR expires_at > $1 ORDER BY created_at DESC`, now)
	if err != nil {
		return nil, fmt.Errorf("load signing keys: %w", err)
	}
	defer rows.Close()
	var keys []*signingKey
	for rows.Next() {
		var k signingKey
		var der []byte
		if err := rows.Scan(&k.id, &der, &k.createdAt, &k.retiredAt); err != nil {
			return nil, err
		}
		if k.key, err = x509.ParsePKCS1PrivateKey(der); err != nil {
			return nil, fmt.Errorf("signing key %s: %w", k.id, err)
		}
		keys = append(keys, &k)
	}
	return keys, rows.Err()
}

// rotate retires the current keys and creates a new one.
func (s *signingKeys) rotate(ctx context.Context, now time.Time) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	q := s.db.Unscoped()
	if _, err := q.Exec(ctx, `UPDATE signing_keys SET retired_at = $1, expires_at = $2 WHERE retired_at IS NULL`, now, now.Add(keyGrace)); err != nil {
		return fmt.Errorf("retire signing keys: %w", err)
	}
	_, err = q.Exec(ctx, `INSERT INTO signing_keys (id, algorithm, private_der, created_at) VALUES ($1, 'RS256', $2, $3)`,
		ids.New("sig_"), x509.MarshalPKCS1PrivateKey(key), now)
	return err
}

func (s *signingKeys) signing(ctx context.Context) (op.SigningKey, error) {
	keys, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	return keys[0], nil
}

func (s *signingKeys) published(ctx context.Context) ([]op.Key, error) {
	keys, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]op.Key, len(keys))
	for i, k := range keys {
		out[i] = publicKey{k}
	}
	return out, nil
}
