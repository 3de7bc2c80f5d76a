package identity

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/tenancy"
)

// IsJWT reports whether a bearer token looks like a JWT (three
// dot-separated parts); other non-API-key tokens are opaque access tokens.
func IsJWT(token string) bool { return strings.Count(token, ".") == 2 }

// JWTSubject returns the subject a JWT claims, without verifying it, or ""
// for anything unreadable. It only names the credential being tried, for
// failure limits.
func JWTSubject(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Subject string `json:"sub"`
	}
	if json.Unmarshal(payload, &claims) != nil || len(claims.Subject) > 200 {
		return ""
	}
	return claims.Subject
}

// AccessTokenSubject returns the id of the token an opaque access token
// claims to be, without checking it, or "" when it does not decrypt. It
// only names the credential being tried, for failure limits.
func (p *Provider) AccessTokenSubject(bearer string) string {
	plain, err := p.op.Crypto().Decrypt(bearer)
	if err != nil {
		return ""
	}
	tokenID, _, _ := strings.Cut(plain, ":")
	return tokenID
}

// AuthenticateAccessToken resolves an opaque OAuth access token to its
// caller: the app acting for its user. A token verified in the last few
// seconds is served from tenancy's credential cache, which every
// revocation purges on every instance before it returns (decision 0116);
// otherwise one lookup reads the token's state.
func (p *Provider) AuthenticateAccessToken(ctx context.Context, bearer string) (*tenancy.Caller, error) {
	hash := sha256.Sum256([]byte(bearer))
	c, expires, ticket, ok := p.tenancy.CachedCredential(hash)
	if ok && p.now().Before(expires) {
		return c, nil
	}
	plain, err := p.op.Crypto().Decrypt(bearer)
	tokenID, _, ok := strings.Cut(plain, ":")
	if err != nil || !ok {
		return nil, errs.Unauthenticated("invalid access token")
	}
	t, err := p.storage.token(ctx, tokenID)
	var unknown errNotFound
	if errors.As(err, &unknown) {
		return nil, errs.Unauthenticated("invalid access token")
	}
	if err != nil {
		return nil, errs.Unavailable("DATABASE_UNAVAILABLE", "cannot verify credentials right now").WithCause(err)
	}
	now := p.now()
	if t.kind != "access" || !t.active(now) {
		return nil, errs.Unauthenticated("the access token is expired or revoked")
	}
	// The grant's scopes, narrowed to what the user's role allows today.
	roleScopes := tenancy.ScopesForRole(t.role)
	var scopes []tenancy.Scope
	for _, s := range t.scopes {
		if slices.Contains(roleScopes, tenancy.Scope(s)) {
			scopes = append(scopes, tenancy.Scope(s))
		}
	}
	c = &tenancy.Caller{Kind: tenancy.KindOAuthApp, OrgID: t.orgID, UserID: t.userID, ClientID: t.clientID,
		CredentialID: t.id, Role: t.role, Scopes: scopes}
	p.tenancy.CacheCredential(ticket, hash, c, t.expiresAt)
	return c, nil
}

// AuthenticateJWT resolves a service account's JWT access token, verified
// against the provider's own keys, to a caller of kind jwt. A disabled
// service account is refused at once.
func (p *Provider) AuthenticateJWT(ctx context.Context, bearer string) (*tenancy.Caller, error) {
	claims, err := op.VerifyAccessToken[*oidc.AccessTokenClaims](ctx, bearer, p.verifier)
	var down errKeysUnavailable
	if errors.As(err, &down) {
		return nil, errs.Unavailable("DATABASE_UNAVAILABLE", "cannot verify credentials right now").WithCause(err)
	}
	if err != nil {
		return nil, errs.Unauthenticated("invalid or expired JWT access token")
	}
	orgID, role, err := p.storage.serviceAccount(ctx, claims.Subject)
	var unknown errNotFound
	if errors.As(err, &unknown) {
		return nil, errs.Unauthenticated("the service account is disabled or unknown")
	}
	if err != nil {
		return nil, errs.Unavailable("DATABASE_UNAVAILABLE", "cannot verify credentials right now").WithCause(err)
	}
	if org, _ := claims.Claims["org_id"].(string); org != orgID {
		return nil, errs.Unauthenticated("the JWT access token belongs to another organization")
	}
	allowed := tenancy.APIKeyScopes(role)
	var scopes []tenancy.Scope
	for _, s := range claims.Scopes {
		if slices.Contains(allowed, tenancy.Scope(s)) {
			scopes = append(scopes, tenancy.Scope(s))
		}
	}
	return &tenancy.Caller{Kind: tenancy.KindJWT, OrgID: orgID, UserID: claims.Subject, CredentialID: claims.JWTID,
		Role: role, Scopes: scopes}, nil
}
