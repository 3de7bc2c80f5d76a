package tenancy

import (
	"context"
	"slices"

	"github.com/assessd/assessd/internal/platform/errs"
)

// Permission is what an operation demands of its caller: a scope on the
// credential, one of the roles, and one of the caller kinds. Empty Roles or
// Kinds allow any.
type Permission struct {
	Scope Scope
	Roles []Role
	Kinds []Kind
}

// StaffRoles are the roles that run an organization's assessments: owner,
// admin and teacher. It is the one definition every package's staff-only
// permissions use; callers must not modify it.
var StaffRoles = []Role{RoleOwner, RoleAdmin, RoleTeacher}

var managers = []Role{RoleOwner, RoleAdmin}

// The permissions of the platform core.
var (
	ReadProfile   = Permission{Scope: ScopeProfile}
	ReadUsers     = Permission{Scope: ScopeUsersRead, Roles: StaffRoles}
	WriteUsers    = Permission{Scope: ScopeUsersWrite, Roles: managers}
	ReadOrg       = Permission{Scope: ScopeOrgsRead}
	WriteOrg      = Permission{Scope: ScopeOrgsWrite, Roles: managers}
	ReadAuditLog  = Permission{Scope: ScopeAuditLogsRead, Roles: managers}
	WriteAuditLog = Permission{Scope: ScopeAuditLogsWrite, Kinds: []Kind{KindOAuthApp}}
	ReadWebhooks  = Permission{Scope: ScopeWebhooksRead, Roles: managers}
	WriteWebhooks = Permission{Scope: ScopeWebhooksWrite, Roles: managers}
	// OperateOrg changes what the operator sells and runs: an
	// organization's plan and request quota. Only the command line's
	// system caller holds it.
	OperateOrg = Permission{Scope: ScopeOrgsWrite, Kinds: []Kind{KindSystem}}
)

// Authorize returns the caller in ctx if it holds permission p: the scope,
// a permitted role and a permitted caller kind. It is the single
// authorization check of the platform.
func Authorize(ctx context.Context, p Permission) (*Caller, error) {
	c, ok := CallerFrom(ctx)
	if !ok {
		return nil, errs.Unauthenticated("authentication required")
	}
	if len(p.Kinds) > 0 && !slices.Contains(p.Kinds, c.Kind) {
		return nil, errs.Forbidden("CALLER_KIND_NOT_ALLOWED", "this operation is not available to %s callers", kindName(c.Kind))
	}
	if !c.HasScope(p.Scope) {
		e := errs.Forbidden("INSUFFICIENT_SCOPE", "the credential lacks scope %s", p.Scope)
		e.Meta = map[string]string{"scope": string(p.Scope)}
		return nil, e
	}
	if len(p.Roles) > 0 && !slices.Contains(p.Roles, c.Role) {
		return nil, errs.Forbidden("ROLE_NOT_ALLOWED", "the %s role may not perform this operation", c.Role)
	}
	return c, nil
}

func kindName(k Kind) string {
	switch k {
	case KindAPIKey:
		return "API key"
	case KindOAuthApp:
		return "OAuth app"
	case KindJWT:
		return "JWT"
	}
	return string(k)
}
