package identity

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// server adapts the library's legacy server to assessd: token responses
// carry user_id and org_id (spec 2.8), an id_token only when openid was
// granted, and PKCE is enforced whenever a challenge was sent.
type server struct {
	*op.LegacyServer
	p *Provider
}

// tokenResponse is spec 2.8's token response.
type tokenResponse struct {
	*oidc.AccessTokenResponse
	UserID string `json:"user_id,omitempty"`
	OrgID  string `json:"org_id,omitempty"`
}

func (s *server) CodeExchange(ctx context.Context, r *op.ClientRequest[oidc.AccessTokenRequest]) (*op.Response, error) {
	// Read the request before delegating: the exchange marks it used.
	a, err := s.p.storage.AuthRequestByCode(ctx, r.Data.Code)
	if err != nil {
		err = grantError(err, "invalid code")
		s.p.metrics.tokenErrors.WithLabelValues("authorization_code", errorCode(err)).Inc()
		return nil, err
	}
	req := a.(*authRequest)
	if req.codeChallenge != "" && r.Data.CodeVerifier == "" {
		s.p.metrics.tokenErrors.WithLabelValues("authorization_code", "invalid_grant").Inc()
		return nil, oidc.ErrInvalidGrant().WithDescription("code_verifier required")
	}
	resp, err := s.LegacyServer.CodeExchange(ctx, r)
	return s.respond(resp, err, "authorization_code", req.orgID, req.userID, req.clientID, req.scopes)
}

func (s *server) RefreshToken(ctx context.Context, r *op.ClientRequest[oidc.RefreshTokenRequest]) (*op.Response, error) {
	t, err := s.p.storage.token(ctx, r.Data.RefreshToken)
	if err != nil {
		err = grantError(err, "invalid refresh token")
		s.p.metrics.tokenErrors.WithLabelValues("refresh_token", errorCode(err)).Inc()
		return nil, err
	}
	resp, err := s.LegacyServer.RefreshToken(ctx, r)
	return s.respond(resp, err, "refresh_token", t.orgID, t.userID, t.clientID, t.scopes)
}

// UserInfo answers a token that is no longer good (revoked, expired, its
// user deleted) as the library answers one it cannot decrypt: 401
// access_denied, for the client to sign the user in again. The library
// answers 403 server_error. A token the storage could not read keeps the
// storage's 503.
func (s *server) UserInfo(ctx context.Context, r *op.Request[oidc.UserInfoRequest]) (*op.Response, error) {
	resp, err := s.LegacyServer.UserInfo(ctx, r)
	var storage op.StatusError
	switch {
	case errors.Is(err, errTokenInvalid):
		return nil, op.NewStatusError(oidc.ErrAccessDenied().WithDescription("access token invalid"), http.StatusUnauthorized)
	case errors.As(errors.Unwrap(err), &storage):
		return nil, storage
	}
	return resp, err
}

// Revocation keeps the storage's 503 for a token it could not read: the
// library answers 500 server_error.
func (s *server) Revocation(ctx context.Context, r *op.ClientRequest[oidc.RevocationRequest]) (*op.Response, error) {
	resp, err := s.LegacyServer.Revocation(ctx, r)
	var storage op.StatusError
	if errors.As(errors.Unwrap(err), &storage) {
		return nil, storage
	}
	return resp, err
}

// Introspect answers 503 when the storage could not read the token: the
// library answers any storage error as an inactive token, which tells the
// resource server to refuse a token that may well be good.
func (s *server) Introspect(ctx context.Context, r *op.Request[op.IntrospectionRequest]) (*op.Response, error) {
	unread := new(error)
	resp, err := s.LegacyServer.Introspect(context.WithValue(ctx, unreadKey{}, unread), r)
	if *unread != nil {
		return nil, *unread
	}
	return resp, err
}

// unreadKey carries, through the library, where the storage notes a token
// it could not read.
type unreadKey struct{}

// noteUnread records err, the storage's 503, for the request in ctx.
func noteUnread(ctx context.Context, err error) {
	if unread, ok := ctx.Value(unreadKey{}).(*error); ok {
		*unread = err
	}
}

// grantError is invalid_grant for a code, refresh token or assertion that
// does not hold, and the storage's 503 when it could not tell (unavailable).
func grantError(err error, description string) error {
	var status op.StatusError
	if errors.As(err, &status) {
		return status
	}
	return oidc.ErrInvalidGrant().WithDescription("%s", description).WithParent(err)
}

// supportedGrants are the grants the token endpoint accepts; the library's
// discovery would also advertise the implicit grant, which no client may
// use (clients are limited to response_type=code).
var supportedGrants = []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken, oidc.GrantTypeBearer}

// Discovery advertises only what the provider really does: the code
// response type and the grants of supportedGrants.
func (s *server) Discovery(ctx context.Context, r *op.Request[struct{}]) (*op.Response, error) {
	resp, err := s.LegacyServer.Discovery(ctx, r)
	if err != nil {
		return nil, err
	}
	if d, ok := resp.Data.(*oidc.DiscoveryConfiguration); ok {
		d.GrantTypesSupported = slices.Clone(supportedGrants)
		d.ResponseTypesSupported = []string{string(oidc.ResponseTypeCode)}
	}
	return resp, nil
}

// JWTProfile is the library's grant (RFC 7523) but for its error: an
// assertion that does not verify (a bad signature, an unknown or revoked
// key, a disabled account, an expired JWT) is invalid_grant, as section 3.1
// requires, where the library answers invalid_request.
func (s *server) JWTProfile(ctx context.Context, r *op.Request[oidc.JWTProfileGrantRequest]) (*op.Response, error) {
	resp, issuer, err := s.jwtProfile(ctx, r.Data)
	if err != nil {
		s.p.metrics.tokenErrors.WithLabelValues("jwt_bearer", errorCode(err)).Inc()
		return nil, err
	}
	if org, _, err := s.p.storage.serviceAccount(ctx, issuer); err == nil {
		s.p.metrics.tokensIssued.WithLabelValues(org, issuer, "jwt_bearer").Inc()
	}
	return op.NewResponse(resp), nil
}

func (s *server) jwtProfile(ctx context.Context, data *oidc.JWTProfileGrantRequest) (*oidc.AccessTokenResponse, string, error) {
	request, err := op.VerifyJWTAssertion(ctx, data.Assertion, s.p.op.JWTProfileVerifier(ctx))
	if err != nil {
		return nil, "", grantError(err, "assertion invalid")
	}
	request.Scopes, err = s.p.storage.ValidateJWTProfileScopes(ctx, request.Issuer, data.Scope)
	if err != nil {
		return nil, "", err
	}
	resp, err := op.CreateJWTTokenResponse(ctx, request, s.p.op)
	return resp, request.Issuer, err
}

// respond adds user_id and org_id, removes an id_token that openid did not
// ask for, and counts the outcome.
func (s *server) respond(resp *op.Response, err error, grant, orgID, userID, clientID string, scopes []string) (*op.Response, error) {
	if err != nil {
		s.p.metrics.tokenErrors.WithLabelValues(grant, errorCode(err)).Inc()
		return nil, err
	}
	tr, ok := resp.Data.(*oidc.AccessTokenResponse)
	if !ok {
		return resp, nil
	}
	if !slices.Contains(scopes, oidc.ScopeOpenID) {
		tr.IDToken = ""
	}
	// The library derives expires_in from the clock and can round down a
	// second; the contract is exactly the lifetime (spec 2.8).
	tr.ExpiresIn = uint64(AccessTokenTTL.Seconds())
	s.p.metrics.tokensIssued.WithLabelValues(orgID, clientID, grant).Inc()
	return op.NewResponse(&tokenResponse{AccessTokenResponse: tr, UserID: userID, OrgID: orgID}), nil
}

// errorCode is the RFC 6749 error code of a token endpoint failure, for
// the error metric.
func errorCode(err error) string {
	var oe *oidc.Error
	if errors.As(err, &oe) {
		return string(oe.ErrorType)
	}
	return "server_error"
}
