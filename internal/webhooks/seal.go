package webhooks

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"

	"github.com/assessd/assessd/internal/store"
)

// sealer encrypts signing keys at rest with AES-256-GCM (decision 0106):
// they must be read back to sign, so they cannot be hashed like API keys.
type sealer struct{ aead cipher.AEAD }

// keyring loads the sealer on first use, so a database that is away at
// start-up only delays the first sealing.
type keyring struct {
	db *store.DB
	mu sync.Mutex
	s  *sealer
}

func (k *keyring) sealer(ctx context.Context) (*sealer, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.s == nil {
		s, err := loadSealer(ctx, k.db)
		if err != nil {
			return nil, err
		}
		k.s = s
	}
	return k.s, nil
}

// loadSealer returns the sealer of the key stored in provider_secrets,
// creating the key on first start; every instance and worker shares it.
func loadSealer(ctx context.Context, db *store.DB) (*sealer, error) {
	fresh := make([]byte, 32)
	_, _ = rand.Read(fresh)
	q := db.Unscoped()
	if _, err := q.Exec(ctx, `INSERT INTO provider_secrets (name, value) VALUES ('webhook_secret_key', $1) ON CONFLICT DO NOTHING`, fresh); err != nil {
		return nil, fmt.Errorf("webhooks: store secret key: %w", err)
	}
	var key []byte
	if err := q.QueryRow(ctx, `SELECT value FROM provider_secrets WHERE name = 'webhook_secret_key'`).Scan(&key); err != nil {
		return nil, fmt.Errorf("webhooks: load secret key: %w", err)
	}
	return newSealer(key)
}

func newSealer(key []byte) (*sealer, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("webhooks: secret key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("webhooks: secret key: %w", err)
	}
	return &sealer{aead: aead}, nil
}

// seal encrypts key for endpoint id: the id is the additional data, so a
// sealed key copied to another endpoint's row does not open.
func (s *sealer) seal(id string, key []byte) []byte {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(key)+s.aead.Overhead())
	_, _ = rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, key, []byte(id))
}

func (s *sealer) open(id string, sealed []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("webhooks: sealed key too short")
	}
	key, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte(id))
	if err != nil {
		return nil, fmt.Errorf("webhooks: open key of %s: %w", id, err)
	}
	return key, nil
}
