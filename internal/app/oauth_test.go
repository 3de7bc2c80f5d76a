package app_test

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

	"github.com/assessd/assessd/internal/identity"
	"github.com/assessd/assessd/tenancy"
)

func TestAuthorizationCodeFlowWithPKCE(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("DE", "pro")
	a := e.newOAuthApp(tn, tenancy.RoleTeacher, identity.ClientInput{Description: "Syncs grades to the SIS"})
	a.conf.Scopes = []string{"openid", "profile", "email", "offline_access", "users:read", "audit-logs:write"}
	ctx := context.Background()

	// A standard relying party discovers the provider.
	relying, err := rp.NewRelyingPartyOIDC(ctx, e.srv.URL, a.conf.ClientID, a.conf.ClientSecret, testRedirect, a.conf.Scopes)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}

	pkce := oauth2.GenerateVerifier()
	back := e.authorize(e.newBrowser(), a, "approve", oauth2.S256ChallengeOption(pkce), oauth2.SetAuthURLParam("nonce", "nonce-42"))
	if back.Query().Get("state") != "state-123" || back.Query().Get("code") == "" {
		t.Fatalf("redirect %s lacks code or state", back)
	}
	tok, err := a.conf.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(pkce))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	if tok.Extra("user_id") != a.user.ID || tok.Extra("org_id") != tn.org.ID {
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
	verifier := rp.NewIDTokenVerifier(e.srv.URL, a.conf.ClientID, relying.IDTokenVerifier().KeySet,
		rp.WithNonce(func(context.Context) string { return "nonce-42" }))
	claims, err := rp.VerifyIDToken[*oidc.IDTokenClaims](ctx, idToken, verifier)
	if err != nil {
		t.Fatalf("id_token does not verify: %v", err)
	}
	if claims.Subject != a.user.ID || claims.Nonce != "nonce-42" || claims.Email != a.email || claims.Name != "Signing In" {
		t.Fatalf("id_token claims sub=%s nonce=%s email=%s name=%s", claims.Subject, claims.Nonce, claims.Email, claims.Name)
	}

	// The token calls the API like an API key, within its scopes.
	me := e.do("GET", "/me", tok.AccessToken, nil).must(t, http.StatusOK)
	if me.body["id"] != a.user.ID {
		t.Fatalf("GET /me = %s", me.raw)
	}
	e.do("GET", "/users", tok.AccessToken, nil).must(t, http.StatusOK)
	if r := e.do("GET", "/org", tok.AccessToken, nil).must(t, http.StatusForbidden); r.reason() != "INSUFFICIENT_SCOPE" {
		t.Fatalf("GET /org without orgs:read: %s", r.raw)
	}

	// Refresh rotates: the new pair works, the old refresh token does not.
	refreshed, err := a.conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if refreshed.RefreshToken == tok.RefreshToken || refreshed.Extra("user_id") != a.user.ID {
		t.Fatalf("refresh response: %+v", refreshed)
	}
	e.do("GET", "/me", refreshed.AccessToken, nil).must(t, http.StatusOK)
	metrics := string(e.do("GET", "/metrics", "", nil).raw)
	for _, grant := range []string{"authorization_code", "refresh_token"} {
		want := `assessd_oauth_tokens_issued_total{client="` + a.client.ID + `",grant_type="` + grant + `",org="` + tn.org.ID + `"} 1`
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// Revocation (RFC 7009) refuses the very next request, for every token of the grant.
	res, err := http.PostForm(e.srv.URL+"/oauth/revoke", url.Values{
		"token": {refreshed.AccessToken}, "client_id": {a.conf.ClientID}, "client_secret": {a.conf.ClientSecret}})
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %v %v", res, err)
	}
	res.Body.Close()
	e.do("GET", "/me", refreshed.AccessToken, nil).must(t, http.StatusUnauthorized)
	e.do("GET", "/me", tok.AccessToken, nil).must(t, http.StatusUnauthorized)
	if _, err := a.conf.TokenSource(ctx, &oauth2.Token{RefreshToken: refreshed.RefreshToken}).Token(); oauthError(err) != "invalid_grant" {
		t.Fatalf("refresh after revocation: %v", err)
	}
}
