package tenancy

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/store"
)

// credentialCache keeps recently verified bearer credentials (API keys and
// OAuth access tokens), by the SHA-256 of the bearer, so that most
// authenticated requests skip the database. Every revocation, role change
// or deletion, in any instance, purges it: the change notifies
// credentialsChannel in its transaction and WatchCredentialChanges purges on
// each notification (decision 0116). While that watch is not connected the
// cache is bypassed, so a missed notification can never keep a revoked
// credential alive.
type credentialCache struct {
	lru     *expirable.LRU[[32]byte, *cachedCredential]
	watched atomic.Bool
	// mu orders add after purge: a lookup that read the database before a
	// purge (its ticket is older than gen) must not cache what it read.
	mu  sync.Mutex
	gen atomic.Uint64
}

type cachedCredential struct {
	caller *Caller
	// expires is the credential's own expiry, on its issuer's clock, which
	// the issuer checks on every hit; zero for API keys.
	expires  time.Time
	lastUsed atomic.Int64
}

// CredentialTicket is the cache generation a database lookup started in;
// CacheCredential drops what such a lookup found if a purge came between.
type CredentialTicket uint64

const (
	credentialCacheSize = 10_000
	credentialCacheTTL  = 30 * time.Second
)

func newCredentialCache() *credentialCache {
	return &credentialCache{lru: expirable.NewLRU[[32]byte, *cachedCredential](credentialCacheSize, nil, credentialCacheTTL)}
}

func (k *credentialCache) get(h [32]byte) (*cachedCredential, CredentialTicket, bool) {
	ticket := CredentialTicket(k.gen.Load())
	if !k.watched.Load() {
		return nil, ticket, false
	}
	e, ok := k.lru.Get(h)
	return e, ticket, ok
}

func (k *credentialCache) add(ticket CredentialTicket, h [32]byte, e *cachedCredential) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.watched.Load() && uint64(ticket) == k.gen.Load() {
		k.lru.Add(h, e)
	}
}

func (k *credentialCache) purge() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.gen.Add(1)
	k.lru.Purge()
}

// CachedCredential returns the caller a bearer credential (by its SHA-256)
// was verified as recently, with the expiry CacheCredential was given
// (which the caller checks), or false and the ticket to cache the result of
// verifying it now.
func (s *Service) CachedCredential(hash [32]byte) (*Caller, time.Time, CredentialTicket, bool) {
	e, ticket, ok := s.creds.get(hash)
	if !ok {
		return nil, time.Time{}, ticket, false
	}
	return e.caller, e.expires, ticket, true
}

// CacheCredential remembers for a few seconds (the cache's TTL) that a
// bearer credential expiring at expires was verified as caller, unless
// credentials changed since ticket was taken.
func (s *Service) CacheCredential(ticket CredentialTicket, hash [32]byte, caller *Caller, expires time.Time) {
	s.creds.add(ticket, hash, &cachedCredential{caller: caller, expires: expires})
}

// PurgeCredentials drops this instance's cached credentials at once; a
// change that revokes a credential calls it after committing, and the
// notification it sent in its transaction does the same on every instance.
func (s *Service) PurgeCredentials() { s.creds.purge() }

// credentialsChannel is notified whenever a credential may have lost
// validity (key or token revoked, user changed or deleted).
const credentialsChannel = "assessd_credentials" //nolint:gosec // G101: a LISTEN channel's name, not a secret

// NotifyCredentialsChanged tells every instance, on commit, to drop its
// cached credentials. PostgreSQL delivers a notification at commit anyway,
// so it goes with the COMMIT of ctx's transaction (store.DB.SendAtCommit).
func NotifyCredentialsChanged(ctx context.Context, db *store.DB) error {
	b := &pgx.Batch{}
	b.Queue(`SELECT pg_notify('` + credentialsChannel + `', '')`)
	return db.SendAtCommit(ctx, b)
}

// WatchCredentialChanges keeps this instance's credential cache consistent
// with changes made by any instance, until ctx ends. It listens on the
// database's direct (unpooled) URL, logs each connect and disconnect, and
// reconnects after failures; meanwhile the cache is bypassed.
func (s *Service) WatchCredentialChanges(ctx context.Context) {
	s.db.Subscribe(ctx, store.Subscription{
		Channel: credentialsChannel,
		Up: func() {
			s.creds.purge()
			s.creds.watched.Store(true)
			slog.InfoContext(ctx, "credential change listener connected")
		},
		Notify: func(string) { s.creds.purge() },
		Down: func(err error) {
			s.creds.watched.Store(false)
			s.creds.purge()
			slog.WarnContext(ctx, "credential change listener disconnected; cached credentials bypassed, retrying", "err", err)
		},
	})
	s.creds.watched.Store(false)
	s.creds.purge()
}

// CredentialListenerUp reports whether the credential change listener is
// connected, that is whether this instance may serve credentials from its
// cache.
func (s *Service) CredentialListenerUp() bool { return s.creds.watched.Load() }
