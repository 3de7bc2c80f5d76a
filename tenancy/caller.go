// Package tenancy owns organizations, users, roles, API keys and the
// authenticated caller: who is calling, for which organization, with which
// scopes. Every tenant-owned operation starts from the Caller in its context.
package tenancy

import (
	"context"
	"slices"

	"github.com/assessd/assessd/internal/store"
)

// Kind is how a caller authenticated.
type Kind string

// The three caller kinds of API.md.
const (
	KindAPIKey   Kind = "api_key"   // an API key of one user
	KindOAuthApp Kind = "oauth_app" // an OAuth access token issued to an app for a user
	KindJWT      Kind = "jwt"       // a service account's JWT access token
	KindSession  Kind = "session"   // the user on assessd's own pages (account, developer area)
	KindEmbed    Kind = "embed"     // an embed session's actor, limited to its flow
)

// Role is a user's (or service account's) role in its organization.
type Role string

// The roles, most privileged first.
const (
	RoleOwner   Role = "owner"
	RoleAdmin   Role = "admin"
	RoleTeacher Role = "teacher"
	RoleStudent Role = "student"
)

// Roles lists every role.
var Roles = []Role{RoleOwner, RoleAdmin, RoleTeacher, RoleStudent}

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return slices.Contains(Roles, r) }

// Caller is the authenticated principal of a request, resolved once by the
// authentication middleware.
type Caller struct {
	Kind  Kind
	OrgID string
	// UserID is the user the caller acts as; for KindJWT it is the service
	// account id.
	UserID string
	// ClientID is the OAuth client of a KindOAuthApp caller.
	ClientID string
	// CredentialID is the API key, token or key id that authenticated.
	CredentialID string
	Role         Role
	Scopes       []Scope
}

// HasScope reports whether the caller's credential carries s.
func (c *Caller) HasScope(s Scope) bool { return slices.Contains(c.Scopes, s) }

type callerKey struct{}

// WithCaller returns ctx carrying c and scoped to c's organization.
func WithCaller(ctx context.Context, c *Caller) context.Context {
	return store.WithOrg(context.WithValue(ctx, callerKey{}, c), c.OrgID)
}

// CallerFrom returns the caller in ctx, if any.
func CallerFrom(ctx context.Context) (*Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(*Caller)
	return c, ok
}
