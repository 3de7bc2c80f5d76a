package identity

import (
	"context"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/testkit/storetest"
)

func TestSigningKeyRotation(t *testing.T) {
	db := storetest.New(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	keys := &signingKeys{db: db, now: func() time.Time { return now }}
	ctx := context.Background()

	published := func() []string {
		t.Helper()
		keys.loadedAt = time.Time{} // skip the cache
		ks, err := keys.published(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, k := range ks {
			out = append(out, k.ID())
		}
		return out
	}
	first := published()
	if len(first) != 1 {
		t.Fatalf("initial JWKS %v, want one key", first)
	}
	now = now.Add(keyRotation + time.Hour)
	rotated := published()
	signing, err := keys.signing(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rotated) != 2 || signing.ID() == first[0] || rotated[1] != first[0] {
		t.Fatalf("after rotation JWKS %v signs with %s; want the new key signing and the old one still published", rotated, signing.ID())
	}
	now = now.Add(keyGrace + time.Hour)
	if got := published(); len(got) != 1 || got[0] != signing.ID() {
		t.Fatalf("after the grace period JWKS %v, want only %s", got, signing.ID())
	}
}
