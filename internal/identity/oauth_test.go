package identity_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"golang.org/x/oauth2"

	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

func TestAuthorizationCodeFlowWithPKCE(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("DE", "pro")
	a := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{Description: "Syncs grades to the SIS"})
	a.Conf.Scopes = []string{"openid", "profile", "email", "offline_access", "users:read", "audit-logs:write"}
	ctx := context.Background()

	// A standard relying party discovers the provider.
	relying, err := rp.NewRelyingPartyOIDC(ctx, e.Srv.URL, a.Conf.ClientID, a.Conf.ClientSecret, apptest.TestRedirect, a.Conf.Scopes)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}

	pkce := oauth2.GenerateVerifier()
	back := e.Authorize(e.NewBrowser(), a, "approve", oauth2.S256ChallengeOption(pkce), oauth2.SetAuthURLParam("nonce", "nonce-42"))
	if back.Query().Get("state") != "state-123" || back.Query().Get("code") == "" {
		t.Fatalf("redirect %s lacks code or state", back)
	}
	tok, err := a.Conf.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(pkce))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	if tok.Extra("user_id") != a.User.ID || tok.Extra("org_id") != tn.Org.ID {
		t.Fatalf("token response user_id=%v org_id=%v", tok.Extra("user_id"), tok.Extra("org_id"))
	}
	if tok.TokenType != "Bearer" || tok.RefreshToken == "" || tok.Extra("expires_in") != float64(86400) {
		t.Fatalf("token response: type %q refresh %q expires_in %v", tok.TokenType, tok.RefreshToken, tok.Extra("expires_in"))
	}
	// audit-logs:write was not allowed for this client, so it is dropped.
	scope, _ := tok.Extra("scope").(string)
	if got := strings.Fields(scope); slices.Contains(got, "audit-logs:write") || !slices.Contains(got, "users:read") {
		t.Fatalf("granted scope %q", scope)
	}
	idToken, _ := tok.Extra("id_token").(string)
	verifier := rp.NewIDTokenVerifier(e.Srv.URL, a.Conf.ClientID, relying.IDTokenVerifier().KeySet,
		rp.WithNonce(func(context.Context) string { return "nonce-42" }))
	claims, err := rp.VerifyIDToken[*oidc.IDTokenClaims](ctx, idToken, verifier)
	if err != nil {
		t.Fatalf("id_token does not verify: %v", err)
	}
	if claims.Subject != a.User.ID || claims.Nonce != "nonce-42" || claims.Email != a.Email || claims.Name != "Signing In" {
		t.Fatalf("id_token claims sub=%s nonce=%s email=%s name=%s", claims.Subject, claims.Nonce, claims.Email, claims.Name)
	}

	// The token calls the API like an API key, within its scopes.
	me := e.Do("GET", "/me", tok.AccessToken, nil).Must(t, http.StatusOK)
	if me.Body["id"] != a.User.ID {
		t.Fatalf("GET /me = %s", me.Raw)
	}
	e.Do("GET", "/users", tok.AccessToken, nil).Must(t, http.StatusOK)
	if r := e.Do("GET", "/org", tok.AccessToken, nil).Must(t, http.StatusForbidden); r.Reason() != "INSUFFICIENT_SCOPE" {
		t.Fatalf("GET /org without orgs:read: %s", r.Raw)
	}

	// Refresh rotates: the new pair works, the old refresh token does not.
	refreshed, err := a.Conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if refreshed.RefreshToken == tok.RefreshToken || refreshed.Extra("user_id") != a.User.ID {
		t.Fatalf("refresh response: %+v", refreshed)
	}
	e.Do("GET", "/me", refreshed.AccessToken, nil).Must(t, http.StatusOK)
	metrics := string(e.Do("GET", "/metrics", "", nil).Raw)
	for _, grant := range []string{"authorization_code", "refresh_token"} {
		want := `assessd_oauth_tokens_issued_total{client="` + a.Client.ID + `",grant_type="` + grant + `",org="` + tn.Org.ID + `"} 1`
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// Revocation (RFC 7009) refuses the very next request, for every token of the grant.
	res, err := http.PostForm(e.Srv.URL+"/oauth/revoke", url.Values{
		"token": {refreshed.AccessToken}, "client_id": {a.Conf.ClientID}, "client_secret": {a.Conf.ClientSecret}})
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %v %v", res, err)
	}
	res.Body.Close()
	e.Do("GET", "/me", refreshed.AccessToken, nil).Must(t, http.StatusUnauthorized)
	e.Do("GET", "/me", tok.AccessToken, nil).Must(t, http.StatusUnauthorized)
	if _, err := a.Conf.TokenSource(ctx, &oauth2.Token{RefreshToken: refreshed.RefreshToken}).Token(); apptest.OAuthError(err) != "invalid_grant" {
		t.Fatalf("refresh after revocation: %v", err)
	}
}
