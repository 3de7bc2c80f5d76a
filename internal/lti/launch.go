package lti

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/platform/egress"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// Skew is the clock difference between a platform and assessd that a
// token's times are allowed.
const Skew = time.Minute

// Bounds of a launch's form: an id_token is a few KiB (a deep-linking
// request with many accepted types, a long custom map: tens), a state is
// rand.Text's 26 characters.
const (
	maxIDToken = 64 << 10
	maxState   = 64
)

// Launch is a verified launch and what it was matched to.
type Launch struct {
	OrgID       string
	Platform    Platform
	MessageType string
	// UserID is the assessd user the launch is for, created on its first
	// launch; Role is the part the launch gives them: student for a
	// learner, teacher for an instructor.
	UserID string
	Role   tenancy.Role
	// Subject is the platform's id of the user (the token's sub).
	Subject      string
	DeploymentID string
	// ClassID is the class of the launch's course context, created on its
	// first launch, with the user on its roster; "" without a context.
	ClassID      string
	Context      *Context
	ResourceLink *ResourceLink
	// AssignmentID is the assignment the resource link opens: its custom
	// parameter assignment_id, set by a deep-linking response or by hand
	// in the platform; "" when it has none.
	AssignmentID string
	Presentation Presentation
	DeepLinking  *DeepLinking
	AGS          *AGSEndpoint
	NRPS         *NRPSEndpoint
	// FrameOrigins are the platform's origins: the pages the launch opens
	// may be framed by them, and only them.
	FrameOrigins []string
}

// CustomAssignment is the custom parameter naming the assignment a
// resource link opens.
const CustomAssignment = "assignment_id"

// refused is a launch the tool does not take: what the page says, and the
// reason the audit entry and the metrics record.
func refused(kind errs.Kind, reason, message string) *errs.Error {
	return &errs.Error{Kind: kind, Reason: reason, Message: message}
}

// Launch verifies a launch, the form a platform posts to the launch URL,
// and matches it to a user and a class (LTI 1.3 Core 5.1.2 and 5.1.3,
// decision 0200): the state its login left, taken once; the id_token's
// RS256 signature by a key of the platform's JWKS; its issuer, audience,
// authorized party, times (within Skew), nonce, deployment, version and
// message type. It records lti.launch, or lti.launch_refused with the
// reason in the organization the launch was for, where that is known.
func (s *Service) Launch(ctx context.Context, idToken, state string) (Launch, error) {
	l, org, platformID, err := s.launch(ctx, idToken, state)
	reason := ""
	if err != nil {
		reason = "error"
		if e, ok := errs.As(err); ok {
			reason = e.Reason
		}
		if org == "" {
			org, platformID = s.claimedPlatform(ctx, idToken)
		}
		if org != "" {
			s.auditRefusal(ctx, org, platformID, err)
		}
	}
	s.metrics.launch(org, l.MessageType, reason)
	return l, err
}

// launch is Launch, with the organization and registration the launch
// was for when they are known.
func (s *Service) launch(ctx context.Context, idToken, state string) (l Launch, org, platformID string, err error) {
	switch {
	case state == "":
		return l, "", "", refused(errs.KindInvalid, "STATE_MISSING", "The launch carries no state: it did not come through this tool's login. Launch again from your course.")
	case len(state) > maxState:
		return l, "", "", refused(errs.KindInvalid, "STATE_UNKNOWN", "The launch's state is not one this tool issued. Launch again from your course.")
	case idToken == "":
		return l, "", "", refused(errs.KindInvalid, "TOKEN_MISSING", "The launch carries no id_token.")
	case len(idToken) > maxIDToken:
		return l, "", "", refused(errs.KindInvalid, "TOKEN_MALFORMED", "The launch's id_token is too large.")
	}
	st, ok, err := s.states.take(ctx, state)
	if err != nil {
		return l, "", "", err
	}
	if !ok {
		return l, "", "", refused(errs.KindInvalid, "STATE_UNKNOWN", "This launch's login expired or was already used. Launch again from your course.")
	}
	ctx = tenancy.WithCaller(ctx, PlatformCaller(st.OrgID, st.PlatformID, provisioning...))
	p, err := s.loadPlatform(ctx, s.db.Q(ctx), st.PlatformID, store.NoLock)
	if errs.Is(err, errs.KindNotFound) {
		return l, st.OrgID, st.PlatformID, refused(errs.KindForbidden, "PLATFORM_UNKNOWN", "The platform's registration was removed.")
	}
	if err != nil {
		return l, st.OrgID, st.PlatformID, err
	}
	c, err := s.verify(ctx, p, idToken, st.Nonce)
	if err != nil {
		return l, st.OrgID, p.ID, err
	}
	l = Launch{OrgID: st.OrgID, Platform: p, MessageType: c.MessageType, Subject: c.Subject, DeploymentID: c.DeploymentID,
		Context: c.Context, ResourceLink: c.ResourceLink, DeepLinking: c.DeepLinking, AGS: c.AGS, NRPS: c.NRPS}
	if c.Presentation != nil {
		l.Presentation = *c.Presentation
	}
	if v, ok := c.Custom[CustomAssignment].(string); ok {
		l.AssignmentID = v
	}
	l.FrameOrigins = frameOrigins(p, c)
	if l.Role = roleOf(c.Roles); l.Role == "" {
		return l, st.OrgID, p.ID, refused(errs.KindForbidden, "ROLE_UNSUPPORTED", "assessd takes launches of a course's learners and instructors; this launch has neither role.")
	}
	if l.MessageType == MessageDeepLinking && l.Role != tenancy.RoleTeacher {
		return l, st.OrgID, p.ID, refused(errs.KindForbidden, "DEEP_LINKING_NOT_INSTRUCTOR", "Only a course's instructors choose what a link opens.")
	}
	if l.UserID, l.ClassID, err = s.provision(ctx, p, c, l.Role); err != nil {
		return l, st.OrgID, p.ID, err
	}
	if l.Role == tenancy.RoleStudent {
		err = s.rememberGradeLink(ctx, l)
	} else {
		err = s.rememberRoster(ctx, l)
	}
	if err != nil {
		return l, st.OrgID, p.ID, err
	}
	after := map[string]any{"messageType": l.MessageType, "deploymentId": l.DeploymentID, "subject": l.Subject, "role": string(l.Role),
		"classId": l.ClassID, "assignmentId": l.AssignmentID}
	if l.Context != nil {
		after["contextId"] = l.Context.ID
	}
	if l.ResourceLink != nil {
		after["resourceLinkId"] = l.ResourceLink.ID
	}
	err = audit.Record(ctx, s.db, audit.Entry{Action: "lti.launch", Actor: audit.Actor{Kind: audit.ActorUser, ID: l.UserID},
		Target: audit.Target{Type: "lti_platform", ID: p.ID}, After: after})
	return l, st.OrgID, p.ID, err
}

// verify checks the id_token of a launch from p whose login issued nonce,
// and returns its claims.
func (s *Service) verify(ctx context.Context, p Platform, idToken, nonce string) (claims, error) {
	var c claims
	tok, err := jwt.ParseSigned(idToken, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil || len(tok.Headers) != 1 {
		return c, refused(errs.KindInvalid, "TOKEN_MALFORMED", "The launch's id_token is not a JWT signed with RS256.")
	}
	key, err := s.keys.key(ctx, p.JWKSURL, tok.Headers[0].KeyID)
	switch {
	case errors.Is(err, errKeyUnknown):
		return c, refused(errs.KindUnauthenticated, "KEY_UNKNOWN", "The platform publishes no key with the id_token's kid.")
	case errors.Is(err, egress.ErrForbiddenAddress):
		return c, refused(errs.KindForbidden, "KEYS_ADDRESS_FORBIDDEN", "The platform's JWKS URL points to an address this tool may not reach.").WithCause(err)
	case err != nil:
		return c, refused(errs.KindUnavailable, "KEYS_UNAVAILABLE", "The platform's keys could not be fetched; launch again in a moment.").WithCause(err)
	}
	if err := tok.Claims(key, &c); err != nil {
		if errors.Is(err, jose.ErrCryptoFailure) {
			return c, refused(errs.KindUnauthenticated, "SIGNATURE_INVALID", "The id_token's signature is not the platform's.")
		}
		return c, refused(errs.KindInvalid, "TOKEN_MALFORMED", "The id_token's claims are not in LTI's form.")
	}
	return c, s.checkClaims(p, c, nonce)
}

// checkClaims checks a signed id_token's claims, each refusal naming the
// claim at fault.
func (s *Service) checkClaims(p Platform, c claims, nonce string) error {
	now := s.now()
	unauthenticated := func(reason, message string) error { return refused(errs.KindUnauthenticated, reason, message) }
	invalid := func(reason, message string) error { return refused(errs.KindInvalid, reason, message) }
	switch {
	case c.Issuer != p.Issuer:
		return unauthenticated("ISSUER_MISMATCH", "The id_token's issuer is not the registered platform's.")
	case !c.Audience.Contains(p.ClientID):
		return unauthenticated("AUDIENCE_MISMATCH", "The id_token is not addressed to this tool's client id.")
	case c.AuthorizedParty != "" && c.AuthorizedParty != p.ClientID, len(c.Audience) > 1 && c.AuthorizedParty == "":
		return unauthenticated("AZP_MISMATCH", "The id_token's authorized party is not this tool's client id.")
	case c.Expiry == nil || now.After(c.Expiry.Time().Add(Skew)):
		return unauthenticated("TOKEN_EXPIRED", "The id_token has expired.")
	case c.IssuedAt == nil || c.IssuedAt.Time().After(now.Add(Skew)), c.NotBefore != nil && c.NotBefore.Time().After(now.Add(Skew)):
		return unauthenticated("TOKEN_NOT_YET_VALID", "The id_token was issued in the future: check the platform's clock.")
	case c.Nonce == "" || c.Nonce != nonce:
		return unauthenticated("NONCE_MISMATCH", "The id_token's nonce is not the one this login issued: a replayed or forged launch.")
	case c.Version != Version:
		return invalid("VERSION_UNSUPPORTED", "The launch is not LTI 1.3.0.")
	case c.MessageType != MessageResourceLink && c.MessageType != MessageDeepLinking:
		return invalid("MESSAGE_TYPE_UNSUPPORTED", "assessd takes resource-link and deep-linking launches only.")
	case c.DeploymentID == "" || !slices.Contains(p.DeploymentIDs, c.DeploymentID):
		return refused(errs.KindForbidden, "DEPLOYMENT_UNKNOWN", "The launch's deployment is not registered for this platform.")
	case c.Subject == "":
		return invalid("CLAIM_MISSING", "The launch names no user (sub): anonymous launches are not taken.")
	case c.TargetLinkURI != "" && !s.ownURL(c.TargetLinkURI):
		return invalid("TARGET_LINK_FOREIGN", "The launch's target_link_uri is not a URL of this tool.")
	case c.MessageType == MessageResourceLink && (c.ResourceLink == nil || c.ResourceLink.ID == ""):
		return invalid("CLAIM_MISSING", "The resource-link launch names no resource link.")
	case c.MessageType == MessageDeepLinking && (c.DeepLinking == nil || c.DeepLinking.ReturnURL == ""):
		return invalid("CLAIM_MISSING", "The deep-linking request names no deep_link_return_url.")
	}
	if c.MessageType == MessageDeepLinking {
		if err := s.checkBrowserURL("deep_link_return_url", c.DeepLinking.ReturnURL); err != nil {
			return invalid("CLAIM_INVALID", "The deep-linking request's deep_link_return_url is not an https URL.")
		}
	}
	return nil
}

// frameOrigins are the origins of the platform that frame the tool: those
// of its login URL and issuer, and of the URLs the launch gives (return
// URLs), when they are https (or http on loopback, in development).
func frameOrigins(p Platform, c claims) []string {
	urls := []string{p.AuthLoginURL, p.Issuer}
	if c.Presentation != nil {
		urls = append(urls, c.Presentation.ReturnURL)
	}
	if c.DeepLinking != nil {
		urls = append(urls, c.DeepLinking.ReturnURL)
	}
	var out []string
	for _, u := range urls {
		if o := origin(u); o != "" && frameable(o) && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

// claimedPlatform is the registration an unverified id_token claims to be
// for (its issuer and audience), where one matches: a launch refused
// before its state named the organization is recorded there.
func (s *Service) claimedPlatform(ctx context.Context, idToken string) (org, platformID string) {
	if idToken == "" || len(idToken) > maxIDToken {
		return "", ""
	}
	tok, err := jwt.ParseSigned(idToken, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return "", ""
	}
	var c claims
	if tok.UnsafeClaimsWithoutVerification(&c) != nil || c.Issuer == "" {
		return "", ""
	}
	client := c.AuthorizedParty
	if client == "" && len(c.Audience) == 1 {
		client = c.Audience[0]
	}
	if client == "" {
		return "", ""
	}
	p, err := s.platformForLogin(ctx, c.Issuer, client)
	if err != nil {
		return "", ""
	}
	return p.orgID, p.id
}

// auditRefusal records a refused launch in org, as done by its platform.
func (s *Service) auditRefusal(ctx context.Context, org, platformID string, refusal error) {
	reason, message := "ERROR", "the launch failed"
	if e, ok := errs.As(refusal); ok {
		reason, message = e.Reason, e.Message
	}
	ctx = tenancy.WithCaller(ctx, PlatformCaller(org, platformID))
	err := audit.Record(ctx, s.db, audit.Entry{Action: "lti.launch_refused",
		Actor:  audit.Actor{Kind: audit.ActorSystem, ID: platformID},
		Target: audit.Target{Type: "lti_platform", ID: platformID}, After: map[string]any{"reason": reason, "message": message}})
	if err != nil {
		slog.WarnContext(ctx, "record a refused LTI launch", "org", org, "reason", reason, "err", err)
	}
}
