package tenancy

import (
	"slices"
	"strings"
)

// Scope limits what a credential may do.
type Scope string

// The scopes of API.md.
const (
	ScopeOpenID             Scope = "openid"
	ScopeProfile            Scope = "profile"
	ScopeEmail              Scope = "email"
	ScopeOfflineAccess      Scope = "offline_access"
	ScopeUsersRead          Scope = "users:read"
	ScopeUsersWrite         Scope = "users:write"
	ScopeOrgsRead           Scope = "orgs:read"
	ScopeOrgsWrite          Scope = "orgs:write"
	ScopeExamsRead          Scope = "exams:read"
	ScopeExamsWrite         Scope = "exams:write"
	ScopeResultsRead        Scope = "results:read"
	ScopeResultsWrite       Scope = "results:write"
	ScopeQuestionTypesRead  Scope = "question-types:read"
	ScopeQuestionTypesWrite Scope = "question-types:write"
	ScopeEmbedWrite         Scope = "embed:write"
	ScopeAuditLogsRead      Scope = "audit-logs:read"
	ScopeAuditLogsWrite     Scope = "audit-logs:write"
	ScopeWebhooksRead       Scope = "webhooks:read"
	ScopeWebhooksWrite      Scope = "webhooks:write"
	ScopeClassesRead        Scope = "classes:read"
	ScopeClassesWrite       Scope = "classes:write"
	ScopeAssignmentsRead    Scope = "assignments:read"
	ScopeAssignmentsWrite   Scope = "assignments:write"
	ScopeAttemptsRead       Scope = "attempts:read"
	ScopeAttemptsWrite      Scope = "attempts:write"
)

// AllScopes lists every scope in documentation order.
var AllScopes = []Scope{
	ScopeOpenID, ScopeProfile, ScopeEmail, ScopeOfflineAccess,
	ScopeUsersRead, ScopeUsersWrite, ScopeOrgsRead, ScopeOrgsWrite,
	ScopeExamsRead, ScopeExamsWrite, ScopeResultsRead, ScopeResultsWrite,
	ScopeQuestionTypesRead, ScopeQuestionTypesWrite, ScopeEmbedWrite,
	ScopeAuditLogsRead, ScopeAuditLogsWrite, ScopeWebhooksRead, ScopeWebhooksWrite,
	ScopeClassesRead, ScopeClassesWrite, ScopeAssignmentsRead, ScopeAssignmentsWrite,
	ScopeAttemptsRead, ScopeAttemptsWrite,
}

var identityScopes = []Scope{ScopeOpenID, ScopeProfile, ScopeEmail, ScopeOfflineAccess}

// roleScopes is the most each role may hold. Credentials never carry a
// scope outside their role's set, and authorization checks the role again.
// audit-logs:write reaches only OAuth apps, and only those the
// organization allowed, whatever the role of the user they act for.
var roleScopes = map[Role][]Scope{
	RoleOwner: AllScopes,
	RoleAdmin: AllScopes,
	RoleTeacher: append(slices.Clone(identityScopes),
		ScopeUsersRead, ScopeOrgsRead, ScopeExamsRead, ScopeExamsWrite,
		ScopeResultsRead, ScopeResultsWrite, ScopeQuestionTypesRead,
		ScopeQuestionTypesWrite, ScopeEmbedWrite, ScopeAuditLogsWrite,
		ScopeClassesRead, ScopeClassesWrite, ScopeAssignmentsRead, ScopeAssignmentsWrite,
		ScopeAttemptsRead, ScopeAttemptsWrite),
	// A student reads the assignments given to them and takes them with
	// their own credential (attempts).
	RoleStudent: append(slices.Clone(identityScopes),
		ScopeOrgsRead, ScopeExamsRead, ScopeResultsRead, ScopeResultsWrite, ScopeAuditLogsWrite,
		ScopeAssignmentsRead, ScopeAttemptsRead, ScopeAttemptsWrite),
}

// ScopesForRole returns every scope role r may hold.
func ScopesForRole(r Role) []Scope { return slices.Clone(roleScopes[r]) }

// APIKeyScopes returns the scopes an API key of a user with role r carries:
// all its role allows except audit-logs:write, which only OAuth apps get.
func APIKeyScopes(r Role) []Scope {
	return slices.DeleteFunc(ScopesForRole(r), func(s Scope) bool { return s == ScopeAuditLogsWrite })
}

// ParseScopes splits a space-separated scope string, dropping unknown and
// repeated scopes.
func ParseScopes(s string) []Scope {
	var out []Scope
	for _, f := range strings.Fields(s) {
		sc := Scope(f)
		if slices.Contains(AllScopes, sc) && !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return out
}

// JoinScopes renders scopes space-separated, as OAuth does.
func JoinScopes(scopes []Scope) string {
	parts := make([]string, len(scopes))
	for i, s := range scopes {
		parts[i] = string(s)
	}
	return strings.Join(parts, " ")
}
