package lti

import (
	"strings"

	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/assessd/assessd/tenancy"
)

// The claim names and values of LTI 1.3 Core, Deep Linking 2.0, Assignment
// and Grade Services 2.0 and Names and Role Provisioning Services 2.0 that
// assessd reads.
const (
	claimPrefix         = "https://purl.imsglobal.org/spec/lti/claim/"
	ClaimMessageType    = claimPrefix + "message_type"
	ClaimVersion        = claimPrefix + "version"
	ClaimDeploymentID   = claimPrefix + "deployment_id"
	ClaimTargetLinkURI  = claimPrefix + "target_link_uri"
	ClaimResourceLink   = claimPrefix + "resource_link"
	ClaimRoles          = claimPrefix + "roles"
	ClaimContext        = claimPrefix + "context"
	ClaimCustom         = claimPrefix + "custom"
	ClaimLaunchPresent  = claimPrefix + "launch_presentation"
	ClaimToolPlatform   = claimPrefix + "tool_platform"
	ClaimDeepLinking    = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
	ClaimAGSEndpoint    = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
	ClaimNRPS           = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
	MessageResourceLink = "LtiResourceLinkRequest"
	MessageDeepLinking  = "LtiDeepLinkingRequest"
	Version             = "1.3.0"
)

// claims are an id_token's: the registered ones and LTI's.
type claims struct {
	jwt.Claims
	AuthorizedParty string `json:"azp"`
	Nonce           string `json:"nonce"`
	Name            string `json:"name"`
	GivenName       string `json:"given_name"`
	FamilyName      string `json:"family_name"`
	Email           string `json:"email"`

	MessageType   string         `json:"https://purl.imsglobal.org/spec/lti/claim/message_type"`
	Version       string         `json:"https://purl.imsglobal.org/spec/lti/claim/version"`
	DeploymentID  string         `json:"https://purl.imsglobal.org/spec/lti/claim/deployment_id"`
	TargetLinkURI string         `json:"https://purl.imsglobal.org/spec/lti/claim/target_link_uri"`
	ResourceLink  *ResourceLink  `json:"https://purl.imsglobal.org/spec/lti/claim/resource_link"`
	Roles         []string       `json:"https://purl.imsglobal.org/spec/lti/claim/roles"`
	Context       *Context       `json:"https://purl.imsglobal.org/spec/lti/claim/context"`
	Custom        map[string]any `json:"https://purl.imsglobal.org/spec/lti/claim/custom"`
	Presentation  *Presentation  `json:"https://purl.imsglobal.org/spec/lti/claim/launch_presentation"`
	DeepLinking   *DeepLinking   `json:"https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"`
	AGS           *AGSEndpoint   `json:"https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"`
	NRPS          *NRPSEndpoint  `json:"https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"`
}

// ResourceLink is the link in the course that was launched.
type ResourceLink struct {
	ID          string `json:"id"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
}

// Context is the course the launch comes from.
type Context struct {
	ID    string   `json:"id"`
	Label string   `json:"label,omitempty"`
	Title string   `json:"title,omitempty"`
	Type  []string `json:"type,omitempty"`
}

// Presentation says how the platform shows the tool.
type Presentation struct {
	DocumentTarget string `json:"document_target,omitempty"`
	ReturnURL      string `json:"return_url,omitempty"`
	Locale         string `json:"locale,omitempty"`
}

// DeepLinking are a deep-linking request's settings.
type DeepLinking struct {
	ReturnURL                 string   `json:"deep_link_return_url"`
	AcceptTypes               []string `json:"accept_types"`
	AcceptPresentationTargets []string `json:"accept_presentation_document_targets"`
	AcceptMultiple            bool     `json:"accept_multiple"`
	AutoCreate                bool     `json:"auto_create"`
	Title                     string   `json:"title,omitempty"`
	Text                      string   `json:"text,omitempty"`
	// Data is the platform's opaque value, returned unchanged.
	Data string `json:"data,omitempty"`
}

// AGSEndpoint is where Assignment and Grade Services are reached.
type AGSEndpoint struct {
	Scope     []string `json:"scope"`
	LineItems string   `json:"lineitems,omitempty"`
	LineItem  string   `json:"lineitem,omitempty"`
}

// NRPSEndpoint is where Names and Role Provisioning Services are reached.
type NRPSEndpoint struct {
	ContextMembershipsURL string   `json:"context_memberships_url"`
	ServiceVersions       []string `json:"service_versions"`
}

// The LIS role vocabularies (LTI 1.3 Core, appendix A).
const (
	membershipRoles  = "http://purl.imsglobal.org/vocab/lis/v2/membership"
	institutionRoles = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#"
)

// contextRole is the principal context role of a role URI ("Instructor"
// for ".../membership#Instructor" and for its sub-role
// ".../membership/Instructor#TeachingAssistant"), or "" when the URI is no
// context role. LTI 1.3 also allows a context role's simple name alone.
func contextRole(uri string) string {
	if rest, ok := strings.CutPrefix(uri, membershipRoles); ok {
		if name, ok := strings.CutPrefix(rest, "#"); ok {
			return name
		}
		if sub, ok := strings.CutPrefix(rest, "/"); ok {
			principal, _, _ := strings.Cut(sub, "#")
			return principal
		}
		return ""
	}
	if !strings.Contains(uri, ":") {
		return uri
	}
	return ""
}

// roleOf maps a launch's role URIs to the assessd role it acts in
// (decision 0200): a teacher for an instructor, teaching assistant,
// content developer, administrator or manager of the context, else a
// student for a learner; without a context role the institution roles
// decide alike. "" when no role maps: mentors and guests take no exams.
func roleOf(uris []string) tenancy.Role {
	var context, institution tenancy.Role
	for _, u := range uris {
		switch contextRole(u) {
		case "Instructor", "ContentDeveloper", "Administrator", "Manager":
			context = tenancy.RoleTeacher
		case "Learner":
			if context == "" {
				context = tenancy.RoleStudent
			}
		}
		name, ok := strings.CutPrefix(u, institutionRoles)
		if !ok {
			continue
		}
		switch name {
		case "Instructor", "Faculty", "Administrator":
			institution = tenancy.RoleTeacher
		case "Student", "Learner":
			if institution == "" {
				institution = tenancy.RoleStudent
			}
		}
	}
	if context != "" {
		return context
	}
	return institution
}
