package lti

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// TestPlatformKeysAreCachedAndRefetchedBounded: a key set is fetched once
// for its known kids; an unknown kid fetches it again at most once per
// refetchAfter; after keysTTL it is read again, and while the platform is
// down a key already known keeps serving and the platform is asked again
// only every refetchAfter.
func TestPlatformKeysAreCachedAndRefetchedBounded(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var fetches atomic.Int64
	var down atomic.Bool
	kids := []string{"k1"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		set := jose.JSONWebKeySet{}
		for _, kid := range kids {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: &key.PublicKey, KeyID: kid, Algorithm: "RS256", Use: "sig"})
		}
		// An encryption key and a key without kid are not for signatures.
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: &key.PublicKey, KeyID: "enc", Use: "enc"}, jose.JSONWebKey{Key: &key.PublicKey})
		_ = json.NewEncoder(w).Encode(set)
	}))
	defer srv.Close()
	now := time.Date(2026, 9, 1, 8, 0, 0, 0, time.UTC)
	keys := newPlatformKeys(srv.Client(), func() time.Time { return now })
	ctx := context.Background()
	lookup := func(kid string, wantErr error, wantFetches int64) {
		t.Helper()
		_, err := keys.key(ctx, srv.URL, kid)
		if !errors.Is(err, wantErr) && (wantErr != nil || err != nil) {
			t.Fatalf("key(%s) = %v, want %v", kid, err, wantErr)
		}
		if n := fetches.Load(); n != wantFetches {
			t.Fatalf("key(%s): %d fetches, want %d", kid, n, wantFetches)
		}
	}
	lookup("k1", nil, 1)
	lookup("k1", nil, 1)
	lookup("enc", errKeyUnknown, 1) // within refetchAfter of the fetch: no request
	lookup("nope", errKeyUnknown, 1)
	now = now.Add(refetchAfter)
	lookup("nope", errKeyUnknown, 2)
	lookup("nope", errKeyUnknown, 2)
	// A key the platform added is found by the refetch its kid causes.
	kids = append(kids, "k2")
	now = now.Add(refetchAfter)
	lookup("k2", nil, 3)
	// Past the TTL the set is read again; down, the known key still serves.
	down.Store(true)
	now = now.Add(keysTTL)
	lookup("k1", nil, 4)
	lookup("k1", nil, 4) // the platform is asked again after refetchAfter, not by every launch
	lookup("k3", errKeysUnavailable, 4)
	now = now.Add(refetchAfter)
	lookup("k3", errKeysUnavailable, 5)
	down.Store(false)
	now = now.Add(refetchAfter)
	lookup("k1", nil, 6)
	lookup("k1", nil, 6)
}
