package lti

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/platform/errs"
)

// LoginRequest is a platform's third-party initiated login (LTI 1.3 Core
// 5.1.1, OIDC third-party initiated login), from the query or form.
type LoginRequest struct {
	Issuer, LoginHint, TargetLinkURI string
	// The optional parameters.
	MessageHint, ClientID, DeploymentID string
}

// maxLoginParam bounds each parameter of a login initiation: platforms
// send ids and URLs (lti_message_hint is the longest, an opaque id or a
// short JWT).
const maxLoginParam = 4096

// Login answers a login initiation with the URL of the authentication
// request to send the browser to, at the registration's authLoginUrl,
// whose state and nonce wait StateTTL for the launch. A login no
// registration matches, or that is missing a parameter, is refused.
func (s *Service) Login(ctx context.Context, in LoginRequest) (string, error) {
	redirect, org, err := s.login(ctx, in)
	reason := ""
	if err != nil {
		reason = "error"
		if e, ok := errs.As(err); ok {
			reason = e.Reason
		}
	}
	s.metrics.login(org, reason)
	return redirect, err
}

func (s *Service) login(ctx context.Context, in LoginRequest) (redirect, org string, err error) {
	for _, p := range []struct{ name, value string }{{"iss", in.Issuer}, {"login_hint", in.LoginHint}, {"target_link_uri", in.TargetLinkURI}} {
		if p.value == "" {
			return "", "", loginRefused("LOGIN_PARAMETER_MISSING", "The platform's login request lacks %s.", p.name)
		}
	}
	for _, v := range []string{in.Issuer, in.LoginHint, in.TargetLinkURI, in.MessageHint, in.ClientID, in.DeploymentID} {
		if len(v) > maxLoginParam {
			return "", "", loginRefused("LOGIN_PARAMETER_TOO_LONG", "A parameter of the platform's login request is longer than %d bytes.", maxLoginParam)
		}
	}
	if !s.ownURL(in.TargetLinkURI) {
		return "", "", loginRefused("TARGET_LINK_FOREIGN", "The login's target_link_uri is not a URL of this tool.")
	}
	p, err := s.platformForLogin(ctx, in.Issuer, in.ClientID)
	if err != nil {
		return "", "", err
	}
	nonce := rand.Text()
	state, err := s.states.put(ctx, loginState{OrgID: p.orgID, PlatformID: p.id, Nonce: nonce})
	if err != nil {
		return "", p.orgID, err
	}
	u, err := url.Parse(p.authLoginURL)
	if err != nil {
		return "", p.orgID, fmt.Errorf("lti: registration %s has an unusable authLoginUrl: %w", p.id, err)
	}
	q := u.Query()
	q.Set("scope", "openid")
	q.Set("response_type", "id_token")
	q.Set("response_mode", "form_post")
	q.Set("prompt", "none")
	q.Set("client_id", p.clientID)
	q.Set("redirect_uri", s.Tool().LaunchURL)
	q.Set("login_hint", in.LoginHint)
	if in.MessageHint != "" {
		q.Set("lti_message_hint", in.MessageHint)
	}
	q.Set("state", state)
	q.Set("nonce", nonce)
	u.RawQuery = q.Encode()
	return u.String(), p.orgID, nil
}

// loginRefused is a login the tool does not answer.
func loginRefused(reason, format string, args ...any) error {
	return &errs.Error{Kind: errs.KindInvalid, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// ownURL reports whether raw is a URL of this tool: under its base URL.
func (s *Service) ownURL(raw string) bool {
	return raw == s.baseURL || strings.HasPrefix(raw, s.baseURL+"/")
}

// loginPlatform is the part of a registration a login needs.
type loginPlatform struct {
	id, orgID, clientID, authLoginURL string
}

// platformForLogin finds the registration of issuer (and clientID, when
// the platform sent one) before the organization is known.
func (s *Service) platformForLogin(ctx context.Context, issuer, clientID string) (loginPlatform, error) {
	rows, err := s.db.Unscoped().Query(ctx, `SELECT id, org_id, client_id, auth_login_url FROM lti_platforms_for_login($1, $2)`, issuer, clientID)
	if err != nil {
		return loginPlatform{}, fmt.Errorf("lti: find the login's platform: %w", err)
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (loginPlatform, error) {
		var p loginPlatform
		err := row.Scan(&p.id, &p.orgID, &p.clientID, &p.authLoginURL)
		return p, err
	})
	if err != nil {
		return loginPlatform{}, fmt.Errorf("lti: find the login's platform: %w", err)
	}
	switch len(found) {
	case 0:
		return loginPlatform{}, &errs.Error{Kind: errs.KindNotFound, Reason: "PLATFORM_UNKNOWN",
			Message: "No organization registered this platform (its issuer and client id) with assessd."}
	case 1:
		return found[0], nil
	}
	return loginPlatform{}, loginRefused("CLIENT_ID_REQUIRED", "Several registrations share this issuer: the platform must send client_id with its login request.")
}
