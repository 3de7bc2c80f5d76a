package identity

import (
	"context"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/assessd/assessd/internal/platform/signingkeys"
)

// signingKey is a key of the provider's ring as the op package signs with
// it.
type signingKey struct{ k *signingkeys.Key }

func (s signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (s signingKey) Key() any                                    { return s.k.Private }
func (s signingKey) ID() string                                  { return s.k.ID }

// publicKey is a published key of the ring as the op package lists it in
// the JWKS.
type publicKey struct{ k *signingkeys.Key }

func (p publicKey) ID() string                         { return p.k.ID }
func (p publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (p publicKey) Use() string                        { return "sig" }
func (p publicKey) Key() any                           { return &p.k.Private.PublicKey }

// signingKeys is the provider's ring of token keys (decision 0008).
type signingKeys struct{ ring *signingkeys.Ring }

func (s signingKeys) signing(ctx context.Context) (op.SigningKey, error) {
	k, err := s.ring.Signing(ctx)
	if err != nil {
		return nil, err
	}
	return signingKey{k}, nil
}

func (s signingKeys) published(ctx context.Context) ([]op.Key, error) {
	keys, err := s.ring.Published(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]op.Key, len(keys))
	for i, k := range keys {
		out[i] = publicKey{k}
	}
	return out, nil
}
