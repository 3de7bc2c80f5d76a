package identity

import (
	"context"
	"slices"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/tenancy"
)

// ServiceAccounts is what the provider reads of service accounts to run
// the JWT bearer grant (RFC 7523) and accept the access tokens it issues.
// Both answer errs.NotFound for what is not there.
// *serviceaccounts.Service implements it.
type ServiceAccounts interface {
	// Enabled returns the organization and role of an enabled service
	// account.
	Enabled(ctx context.Context, id string) (orgID string, role tenancy.Role, err error)
	// PublicKey returns an unrevoked registered key and the account it
	// belongs to.
	PublicKey(ctx context.Context, keyID string) (accountID string, key any, err error)
}

// serviceAccount returns the organization and role of an enabled service
// account.
func (s *storage) serviceAccount(ctx context.Context, id string) (orgID string, role tenancy.Role, err error) {
	orgID, role, err = s.accounts.Enabled(ctx, id)
	switch {
	case errs.Is(err, errs.KindNotFound):
		err = errNotFound{"service account"}
	case err != nil:
		err = unavailable(err)
	}
	return orgID, role, err
}

// GetKeyByIDAndClientID returns the registered key that signed a JWT
// assertion (RFC 7523); clientID is the assertion's issuer, the service
// account id.
func (s *storage) GetKeyByIDAndClientID(ctx context.Context, keyID, clientID string) (*jose.JSONWebKey, error) {
	accountID, key, err := s.accounts.PublicKey(ctx, keyID)
	if errs.Is(err, errs.KindNotFound) || (err == nil && accountID != clientID) {
		return nil, errNotFound{"key"}
	}
	if err != nil {
		return nil, unavailable(err)
	}
	return &jose.JSONWebKey{Key: key, KeyID: keyID, Use: "sig"}, nil
}

// ValidateJWTProfileScopes narrows the requested scopes to what the
// service account's role allows (never audit-logs:write); no scope asks
// for all of them.
func (s *storage) ValidateJWTProfileScopes(ctx context.Context, serviceAccountID string, requested []string) ([]string, error) {
	_, role, err := s.serviceAccount(ctx, serviceAccountID)
	if err != nil {
		return nil, err
	}
	allowed := tenancy.APIKeyScopes(role)
	var out []string
	for _, sc := range allowed {
		if len(requested) == 0 || slices.Contains(requested, string(sc)) {
			out = append(out, string(sc))
		}
	}
	return out, nil
}

// JWTProfileTokenType makes service-account access tokens signed JWTs.
func (s *storage) JWTProfileTokenType(context.Context, op.TokenRequest) (op.AccessTokenType, error) {
	return op.AccessTokenTypeJWT, nil
}
