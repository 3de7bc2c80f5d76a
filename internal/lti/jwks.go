package lti

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	lru "github.com/hashicorp/golang-lru/v2"
)

// The platform key cache (decision 0200): a platform's JWKS is fetched
// when a launch names a key not yet seen, kept for keysTTL, and fetched
// again for an unknown kid at most once per refetchAfter, so a flood of
// tokens with made-up kids costs the platform one request per interval.
const (
	keysTTL      = time.Hour
	refetchAfter = 10 * time.Second
	// maxJWKSBytes bounds a key set's body; real ones hold a few keys in
	// a few KiB.
	maxJWKSBytes = 256 << 10
	// maxKeySets bounds the key sets cached, one per JWKS URL.
	maxKeySets = 1000
)

// Errors of a key lookup.
var (
	errKeyUnknown = errors.New("lti: the platform publishes no key with this kid")
	// errKeysUnavailable wraps a failed fetch of the key set.
	errKeysUnavailable = errors.New("lti: the platform's keys could not be fetched")
)

// platformKeys caches the platforms' public keys by JWKS URL and kid.
type platformKeys struct {
	client httpClient
	now    func() time.Time
	sets   *lru.Cache[string, *keySet]
	mu     sync.Mutex // guards sets' creation of entries
}

// keySet is one platform's keys; its mutex makes concurrent launches that
// miss wait for one fetch.
type keySet struct {
	mu        sync.Mutex
	keys      map[string]*rsa.PublicKey
	fetchedAt time.Time
	// triedAt is the last fetch, successful or not, and failed its error:
	// a platform that is down is asked again after refetchAfter, not by
	// every launch.
	triedAt time.Time
	failed  error
}

func newPlatformKeys(client httpClient, now func() time.Time) *platformKeys {
	sets, _ := lru.New[string, *keySet](maxKeySets) // fails only for a size < 1
	return &platformKeys{client: client, now: now, sets: sets}
}

func (k *platformKeys) set(url string) *keySet {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s, ok := k.sets.Get(url); ok {
		return s
	}
	s := &keySet{}
	k.sets.Add(url, s)
	return s
}

// key returns the RS256 key kid of the key set at url. A key known from
// an earlier fetch keeps serving while the platform cannot be reached.
func (k *platformKeys) key(ctx context.Context, url, kid string) (*rsa.PublicKey, error) {
	s := k.set(url)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := k.now()
	key, known := s.keys[kid]
	if known && now.Sub(s.fetchedAt) < keysTTL {
		return key, nil
	}
	if !s.triedAt.IsZero() && now.Sub(s.triedAt) < refetchAfter {
		switch {
		case known:
			return key, nil
		case s.failed != nil:
			return nil, s.failed
		}
		return nil, errKeyUnknown
	}
	s.triedAt = now
	keys, err := k.fetch(ctx, url)
	if s.failed = err; err != nil {
		if known {
			return key, nil
		}
		return nil, err
	}
	s.keys, s.fetchedAt = keys, now
	if key, ok := keys[kid]; ok {
		return key, nil
	}
	return nil, errKeyUnknown
}

// fetch reads the key set at url: its RSA signing keys by kid. Keys of
// other types or uses are skipped; a key without a kid cannot be named by
// a token and is skipped too.
func (k *platformKeys) fetch(ctx context.Context, url string) (map[string]*rsa.PublicKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errKeysUnavailable, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "assessd-lti/1")
	resp, err := k.client.Do(req) //nolint:gosec // the registration's URL; egress checks every connected address
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errKeysUnavailable, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: status %d", errKeysUnavailable, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errKeysUnavailable, err)
	}
	if len(body) > maxJWKSBytes {
		return nil, fmt.Errorf("%w: the key set is larger than %d bytes", errKeysUnavailable, maxJWKSBytes)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("%w: %w", errKeysUnavailable, err)
	}
	keys := map[string]*rsa.PublicKey{}
	for _, jwk := range set.Keys {
		pub, ok := jwk.Key.(*rsa.PublicKey)
		if !ok || jwk.KeyID == "" || (jwk.Use != "" && jwk.Use != "sig") || (jwk.Algorithm != "" && jwk.Algorithm != string(jose.RS256)) {
			continue
		}
		keys[jwk.KeyID] = pub
	}
	return keys, nil
}
