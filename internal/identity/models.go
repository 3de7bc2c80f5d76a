package identity

import (
	"slices"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/assessd/assessd/tenancy"
)

// client is a registered OAuth client as the provider sees it.
type client struct {
	id           string
	orgID        string
	name         string
	description  string
	redirectURIs []string
	secretHash   []byte   // nil for public clients
	scopes       []string // the scopes it may request; empty: any
}

var _ op.Client = (*client)(nil)

func (c *client) public() bool                        { return c.secretHash == nil }
func (c *client) GetID() string                       { return c.id }
func (c *client) RedirectURIs() []string              { return c.redirectURIs }
func (c *client) PostLogoutRedirectURIs() []string    { return nil }
func (c *client) LoginURL(id string) string           { return "/login?authRequestID=" + id }
func (c *client) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeBearer }
func (c *client) IDTokenLifetime() time.Duration      { return time.Hour }
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c *client) ClockSkew() time.Duration             { return 0 }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

// DevMode lets loopback http redirect URIs through the library's checks;
// registration already allows only https and http on loopback (RFC 8252).
func (c *client) DevMode() bool { return true }

func (c *client) ApplicationType() op.ApplicationType {
	if c.public() {
		return op.ApplicationTypeNative
	}
	return op.ApplicationTypeWeb
}

func (c *client) AuthMethod() oidc.AuthMethod {
	if c.public() {
		return oidc.AuthMethodNone
	}
	return oidc.AuthMethodBasic // also accepts client_secret_post
}

func (c *client) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}
}

// IsScopeAllowed admits the API scopes the client may request; what is
// finally granted is decided at consent, once the user (and so the role
// and the organization's audit-log allowance) is known.
func (c *client) IsScopeAllowed(scope string) bool {
	return slices.Contains(tenancy.AllScopes, tenancy.Scope(scope)) &&
		(len(c.scopes) == 0 || slices.Contains(c.scopes, scope))
}

// authRequest is an authorization request from /oauth/authorize until its
// code is exchanged.
type authRequest struct {
	id                  string
	clientID            string
	redirectURI         string
	scopes              []string
	state               string
	nonce               string
	responseType        oidc.ResponseType
	responseMode        oidc.ResponseMode
	codeChallenge       string
	codeChallengeMethod string
	orgID               string
	userID              string
	authTime            time.Time
	done                bool
	grantID             string
}

var _ op.AuthRequest = (*authRequest)(nil)

func (a *authRequest) GetID() string                      { return a.id }
func (a *authRequest) GetACR() string                     { return "" }
func (a *authRequest) GetAMR() []string                   { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string              { return []string{a.clientID} }
func (a *authRequest) GetAuthTime() time.Time             { return a.authTime }
func (a *authRequest) GetClientID() string                { return a.clientID }
func (a *authRequest) GetNonce() string                   { return a.nonce }
func (a *authRequest) GetRedirectURI() string             { return a.redirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType { return a.responseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode { return a.responseMode }
func (a *authRequest) GetScopes() []string                { return a.scopes }
func (a *authRequest) GetState() string                   { return a.state }
func (a *authRequest) GetSubject() string                 { return a.userID }
func (a *authRequest) Done() bool                         { return a.done }

func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	if a.codeChallenge == "" {
		return nil
	}
	return &oidc.CodeChallenge{Challenge: a.codeChallenge, Method: oidc.CodeChallengeMethod(a.codeChallengeMethod)}
}

// refreshRequest is a refresh token being exchanged.
type refreshRequest struct {
	tokenID  string
	grantID  string
	orgID    string
	userID   string
	clientID string
	scopes   []string
	authTime time.Time
}

var _ op.RefreshTokenRequest = (*refreshRequest)(nil)

func (r *refreshRequest) GetAMR() []string            { return []string{"pwd"} }
func (r *refreshRequest) GetAudience() []string       { return []string{r.clientID} }
func (r *refreshRequest) GetAuthTime() time.Time      { return r.authTime }
func (r *refreshRequest) GetClientID() string         { return r.clientID }
func (r *refreshRequest) GetScopes() []string         { return r.scopes }
func (r *refreshRequest) GetSubject() string          { return r.userID }
func (r *refreshRequest) SetCurrentScopes(s []string) { r.scopes = s }
