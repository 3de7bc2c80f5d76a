package signingkeys

import (
	"context"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/testkit/storetest"
)

func TestSigningKeyRotation(t *testing.T) {
	db := storetest.New(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ring := New(db, PurposeOIDC, func() time.Time { return now })
	ctx := context.Background()

	published := func(r *Ring) []string {
		t.Helper()
		r.loadedAt = time.Time{} // skip the cache
		ks, err := r.Published(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, k := range ks {
			out = append(out, k.ID)
		}
		return out
	}
	first := published(ring)
	if len(first) != 1 {
		t.Fatalf("initial JWKS %v, want one key", first)
	}
	now = now.Add(Rotation + time.Hour)
	rotated := published(ring)
	signing, err := ring.Signing(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rotated) != 2 || signing.ID == first[0] || rotated[1] != first[0] {
		t.Fatalf("after rotation JWKS %v signs with %s; want the new key signing and the old one still published", rotated, signing.ID)
	}
	now = now.Add(Grace + time.Hour)
	if got := published(ring); len(got) != 1 || got[0] != signing.ID {
		t.Fatalf("after the grace period JWKS %v, want only %s", got, signing.ID)
	}

	// Another purpose's ring is apart: its own first key, not the OIDC
	// provider's, and its rotation retires none of them.
	lti := New(db, PurposeLTI, func() time.Time { return now })
	ltiKeys := published(lti)
	if len(ltiKeys) != 1 || ltiKeys[0] == signing.ID {
		t.Fatalf("LTI ring %v, want a key of its own", ltiKeys)
	}
	if got := published(ring); len(got) != 1 || got[0] != signing.ID {
		t.Fatalf("the LTI ring's first key changed the OIDC ring: %v", got)
	}
	set, err := lti.JWKS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 1 || set.Keys[0].KeyID != ltiKeys[0] || !set.Keys[0].IsPublic() || set.Keys[0].Algorithm != "RS256" || set.Keys[0].Use != "sig" {
		t.Fatalf("JWKS %+v", set.Keys)
	}
}
