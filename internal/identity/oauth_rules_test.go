package identity_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"golang.org/x/oauth2"

	"github.com/assessd/assessd/internal/identity"
	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

func TestDiscovery(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	res, err := http.Get(e.Srv.URL + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var d map[string]any
	if err := json.NewDecoder(res.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"issuer": e.Srv.URL, "authorization_endpoint": e.Srv.URL + "/oauth/authorize", "token_endpoint": e.Srv.URL + "/oauth/token",
		"revocation_endpoint": e.Srv.URL + "/oauth/revoke", "introspection_endpoint": e.Srv.URL + "/oauth/introspect",
		"userinfo_endpoint": e.Srv.URL + "/oauth/userinfo", "jwks_uri": e.Srv.URL + "/oauth/keys",
	}
	for k, v := range want {
		if d[k] != v {
			t.Errorf("%s = %v, want %s", k, d[k], v)
		}
	}
	if !strings.Contains(apptest.JSON(d["code_challenge_methods_supported"]), "S256") || !strings.Contains(apptest.JSON(d["scopes_supported"]), "audit-logs:write") {
		t.Errorf("discovery lacks S256 or the API scopes: %v", d)
	}
	keys := e.Do("GET", "/oauth/keys", "", nil).Must(t, http.StatusOK)
	if n := len(keys.Body["keys"].([]any)); n < 1 {
		t.Fatalf("JWKS has %d keys", n)
	}
}

func TestDenyAndRedirectMismatch(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	a := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{})
	a.Conf.Scopes = []string{"openid", "profile"}

	back := e.Authorize(e.NewBrowser(), a, "deny", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
	if back.Query().Get("error") != "access_denied" || back.Query().Get("state") != "state-123" || back.Query().Get("code") != "" {
		t.Fatalf("deny redirected to %s", back)
	}

	// An unregistered redirect URI gets an error page, never a redirect.
	evil := *a.Conf
	evil.RedirectURL = "https://evil.example/callback"
	p := e.NewBrowser().Get(evil.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	if p.Status < 400 || p.Location != "" || strings.HasPrefix(p.URL.String(), "https://evil.example") {
		t.Fatalf("redirect mismatch: status %d, location %q, url %s", p.Status, p.Location, p.URL)
	}

	// An unknown client, well formed or not, is the caller's mistake: a 400
	// naming it, never a redirect or a server error.
	for _, id := range []string{"cli_01M8F6J4FAQ9H8JPSCMAT749CQ", "../../etc/passwd", strings.Repeat("x", 300), "cli_\x00"} {
		unknown := *a.Conf
		unknown.ClientID = id
		p := e.NewBrowser().Get(unknown.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		if p.Status != http.StatusBadRequest || p.Location != "" || !strings.Contains(p.Body, `"error":"invalid_client"`) {
			t.Fatalf("unknown client %q: status %d, location %q\n%s", id, p.Status, p.Location, p.Body)
		}
		out := e.NewBrowser().Get(e.Srv.URL + "/oauth/logout?" + url.Values{"client_id": {id}}.Encode())
		if out.Status != http.StatusBadRequest || !strings.Contains(out.Body, `"error":"invalid_client"`) {
			t.Fatalf("sign-out for unknown client %q: status %d\n%s", id, out.Status, out.Body)
		}
	}
}

func TestCodeAndRefreshReplay(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	a := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{})
	a.Conf.Scopes = []string{"profile", "offline_access"}
	ctx := context.Background()

	verifier := oauth2.GenerateVerifier()
	code := e.CodeFor(a, oauth2.S256ChallengeOption(verifier))
	tok, err := a.Conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if tok.Extra("id_token") != nil {
		t.Fatalf("id_token issued without openid: %v", tok.Extra("id_token"))
	}
	e.Do("GET", "/me", tok.AccessToken, nil).Must(t, http.StatusOK)
	// Reusing the code fails and revokes what it produced.
	if _, err := a.Conf.Exchange(ctx, code, oauth2.VerifierOption(verifier)); apptest.OAuthError(err) != "invalid_grant" {
		t.Fatalf("code reuse: %v", err)
	}
	e.Do("GET", "/me", tok.AccessToken, nil).Must(t, http.StatusUnauthorized)

	// Reusing a rotated refresh token revokes the whole family.
	tok = e.Token(a)
	next, err := a.Conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); apptest.OAuthError(err) != "invalid_grant" {
		t.Fatalf("refresh reuse: %v", err)
	}
	e.Do("GET", "/me", next.AccessToken, nil).Must(t, http.StatusUnauthorized)
	if _, err := a.Conf.TokenSource(ctx, &oauth2.Token{RefreshToken: next.RefreshToken}).Token(); apptest.OAuthError(err) != "invalid_grant" {
		t.Fatalf("refresh of a revoked family: %v", err)
	}
}

func TestPKCERules(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	a := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{})
	a.Conf.Scopes = []string{"profile"}
	ctx := context.Background()

	verifier := oauth2.GenerateVerifier()
	code := e.CodeFor(a, oauth2.S256ChallengeOption(verifier))
	if _, err := a.Conf.Exchange(ctx, code, oauth2.VerifierOption(oauth2.GenerateVerifier())); apptest.OAuthError(err) != "invalid_grant" {
		t.Fatalf("wrong verifier: %v", err)
	}
	code = e.CodeFor(a, oauth2.S256ChallengeOption(verifier))
	if _, err := a.Conf.Exchange(ctx, code); apptest.OAuthError(err) != "invalid_grant" {
		t.Fatalf("missing verifier: %v", err)
	}

	// A public client has no secret and must use PKCE.
	pub := e.NewOAuthApp(e.NewTenant("FR", "pro"), tenancy.RoleStudent, clients.ClientInput{Name: "Mobile", Public: true})
	pub.Conf.Scopes = []string{"openid", "profile"}
	if pub.Conf.ClientSecret != "" {
		t.Fatal("public client got a secret")
	}
	p := e.NewBrowser().Get(pub.Conf.AuthCodeURL("s"))
	if loc, _ := url.Parse(p.Location); p.Status != http.StatusFound || loc == nil || loc.Query().Get("error") != "invalid_request" {
		t.Fatalf("public client without PKCE: %d %s", p.Status, p.Location)
	}
	p = e.NewBrowser().Get(pub.Conf.AuthCodeURL("s", oauth2.SetAuthURLParam("code_challenge", "abc"), oauth2.SetAuthURLParam("code_challenge_method", "plain")))
	if loc, _ := url.Parse(p.Location); loc == nil || loc.Query().Get("error") != "invalid_request" {
		t.Fatalf("plain PKCE: %d %s", p.Status, p.Location)
	}
	verifier = oauth2.GenerateVerifier()
	tok, err := pub.Conf.Exchange(ctx, e.CodeFor(pub, oauth2.S256ChallengeOption(verifier)), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("public client exchange: %v", err)
	}
	e.Do("GET", "/me", tok.AccessToken, nil).Must(t, http.StatusOK)
}

func TestExpiredAccessToken(t *testing.T) {
	t.Parallel()
	now := time.Now()
	e := apptest.NewWithClock(t, func() time.Time { return now })
	tn := e.NewTenant("US", "pro")
	a := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{})
	a.Conf.Scopes = []string{"profile", "offline_access"}
	tok := e.Token(a)
	now = now.Add(identity.AccessTokenTTL - time.Minute)
	e.Do("GET", "/me", tok.AccessToken, nil).Must(t, http.StatusOK)
	now = now.Add(2 * time.Minute)
	e.Do("GET", "/me", tok.AccessToken, nil).Must(t, http.StatusUnauthorized)
	// The refresh token (30 days) replaces it.
	fresh, err := a.Conf.TokenSource(context.Background(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatal(err)
	}
	e.Do("GET", "/me", fresh.AccessToken, nil).Must(t, http.StatusOK)
	now = now.Add(identity.RefreshTokenTTL)
	if _, err := a.Conf.TokenSource(context.Background(), &oauth2.Token{RefreshToken: fresh.RefreshToken}).Token(); apptest.OAuthError(err) != "invalid_grant" {
		t.Fatalf("expired refresh token: %v", err)
	}
}

func TestAuditLogWriteByCallerKind(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	entry := `{"action":"grade.synced","target":{"type":"exam","id":"exm_42"},"reason":"nightly sync","after":{"grades":12}}`

	// An app its organization allowed receives audit-logs:write and may write.
	a := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{Scopes: []string{"profile", "audit-logs:write"}, AllowAuditLogsWrite: true})
	a.Conf.Scopes = []string{"profile", "audit-logs:write"}
	tok := e.Token(a)
	if !strings.Contains(tok.Extra("scope").(string), "audit-logs:write") {
		t.Fatalf("allowed client was not granted audit-logs:write: %v", tok.Extra("scope"))
	}
	r := e.Do("POST", "/audit-logs", tok.AccessToken, entry).Must(t, http.StatusOK)
	actor := r.Body["actor"].(map[string]any)
	if r.Body["origin"] != "app" || actor["id"] != a.User.ID || actor["clientId"] != a.Client.ID || actor["kind"] != "user" {
		t.Fatalf("app entry = %s", r.Raw)
	}
	listed := e.Do("GET", "/audit-logs?action=grade.synced", tn.Keys[tenancy.RoleOwner], nil).Must(t, http.StatusOK)
	if n := len(listed.Body["auditLogs"].([]any)); n != 1 {
		t.Fatalf("the app's entry is not in the timeline: %s", listed.Raw)
	}
	e.Do("POST", "/audit-logs", tok.AccessToken, `{"action":"Bad Action","target":{"type":"exam","id":"x"}}`).Must(t, http.StatusBadRequest)
	e.Do("POST", "/audit-logs", tok.AccessToken, `{"action":"grade.synced"}`).Must(t, http.StatusBadRequest)

	// An API key is refused; so is a service account's JWT.
	if r := e.Do("POST", "/audit-logs", tn.Keys[tenancy.RoleOwner], entry).Must(t, http.StatusForbidden); r.Reason() != "CALLER_KIND_NOT_ALLOWED" {
		t.Fatalf("API key: %s", r.Raw)
	}
	jwt := e.ServiceAccountToken(tn, tenancy.RoleAdmin, "")
	if r := e.Do("POST", "/audit-logs", jwt, entry).Must(t, http.StatusForbidden); r.Reason() != "CALLER_KIND_NOT_ALLOWED" {
		t.Fatalf("JWT caller: %s", r.Raw)
	}
}

func TestIntrospectionAndUserinfo(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	a := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{})
	a.Conf.Scopes = []string{"openid", "profile"}
	tok := e.Token(a)
	introspect := func(token, clientID, secret string) map[string]any {
		req, _ := http.NewRequest("POST", e.Srv.URL+"/oauth/introspect", strings.NewReader(url.Values{"token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(clientID, secret)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		out["_status"] = res.StatusCode
		return out
	}
	got := introspect(tok.AccessToken, a.Conf.ClientID, a.Conf.ClientSecret)
	if got["active"] != true || got["sub"] != a.User.ID || got["client_id"] != a.Client.ID || got["org_id"] != tn.Org.ID {
		t.Fatalf("introspection of a live token = %v", got)
	}
	if got := introspect(tok.AccessToken, a.Conf.ClientID, "wrong"); got["_status"] != http.StatusUnauthorized && got["active"] == true {
		t.Fatalf("introspection with a wrong secret = %v", got)
	}
	if got := introspect("garbage", a.Conf.ClientID, a.Conf.ClientSecret); got["active"] == true {
		t.Fatalf("introspection of garbage = %v", got)
	}

	status, info, _ := e.Userinfo(tok.AccessToken)
	if status != http.StatusOK || info["sub"] != a.User.ID || info["name"] != "Signing In" || info["email"] != nil {
		t.Fatalf("userinfo with openid profile = %d %v (email must need the email scope)", status, info)
	}

	// A token that is no longer good is 401 with RFC 6750's challenge, for
	// the app to sign the user in again, whether it is garbage or was
	// revoked; no token at all gets the bare challenge.
	const invalidToken = `Bearer realm="assessd", error="invalid_token"`
	if status, info, challenge := e.Userinfo("garbage"); status != http.StatusUnauthorized || challenge != invalidToken {
		t.Errorf("userinfo with garbage = %d %v (WWW-Authenticate %q), want 401 %s", status, info, challenge, invalidToken)
	}
	if status, _, challenge := e.Userinfo(""); status != http.StatusUnauthorized || challenge != `Bearer realm="assessd"` {
		t.Errorf("userinfo without a token = %d (WWW-Authenticate %q), want 401 with the bare challenge", status, challenge)
	}
	res, err := http.PostForm(e.Srv.URL+"/oauth/revoke", url.Values{"token": {tok.AccessToken}, "client_id": {a.Conf.ClientID}, "client_secret": {a.Conf.ClientSecret}})
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %v %v", res, err)
	}
	res.Body.Close()
	if status, info, challenge := e.Userinfo(tok.AccessToken); status != http.StatusUnauthorized || info["error"] != "access_denied" || challenge != invalidToken {
		t.Errorf("userinfo with a revoked token = %d %v (WWW-Authenticate %q), want 401 access_denied %s", status, info, challenge, invalidToken)
	}
}

func TestLoginPageProtections(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	a := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{})
	b := e.NewBrowser()
	login := b.Get(e.Srv.URL + "/login")
	if login.Status != http.StatusOK || !strings.Contains(login.Body, `name="email"`) || !strings.Contains(login.Body, `name="password"`) {
		t.Fatalf("login page: %d", login.Status)
	}
	// Without the CSRF token the form is refused.
	if p := b.Post(e.Srv.URL+"/login", url.Values{"email": {a.Email}, "password": {a.Password}}); p.Status != http.StatusForbidden {
		t.Fatalf("login without CSRF token: %d", p.Status)
	}
	// Repeated failures from one address are slowed down: 10 at once, then
	// one every 12 s (5 a minute). Each failure costs a password hash, slow
	// under the race detector on a busy machine, so the refills the attempts
	// took time for are allowed too.
	var last apptest.Page
	start, tries := time.Now(), 0
	for last.Status != http.StatusTooManyRequests && tries < 40 {
		page := b.Get(e.Srv.URL + "/login")
		last = b.Post(e.Srv.URL+"/login", url.Values{"csrf": {page.Field("csrf")}, "email": {a.Email}, "password": {"wrong password"}})
		tries++
	}
	refilled := int(time.Since(start) / (12 * time.Second))
	if last.Status != http.StatusTooManyRequests || tries <= 10 || tries > 11+refilled {
		t.Fatalf("failed login %d answered %d, want the first 429 at attempt 11 (up to %d after %d refills)", tries, last.Status, 11+refilled, refilled)
	}
	res, _ := http.Get(e.Srv.URL + "/login")
	res.Body.Close()
	if res.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(res.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Fatalf("login page can be framed: %v", res.Header)
	}
}

func TestTokenScopesPerEndpointFamily(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	a := e.NewOAuthApp(tn, tenancy.RoleAdmin, clients.ClientInput{})
	token := func(scopes ...string) string {
		a.Conf.Scopes = scopes
		return e.Token(a).AccessToken
	}
	profileOnly := token("profile")
	tests := []struct {
		method, path, scope string
		body                any
	}{
		{"GET", "/users", "users:read", nil},
		{"POST", "/users", "users:write", `{"email":"n@x.test","name":"N"}`},
		{"GET", "/org", "orgs:read", nil},
		{"PATCH", "/org", "orgs:write", `{"name":"Renamed"}`},
		{"GET", "/audit-logs", "audit-logs:read", nil},
	}
	for _, tt := range tests {
		r := e.Do(tt.method, tt.path, profileOnly, tt.body).Must(t, http.StatusForbidden)
		if !strings.Contains(r.Header.Get("WWW-Authenticate"), `scope="`+tt.scope+`"`) {
			t.Errorf("%s %s without %s: WWW-Authenticate %q", tt.method, tt.path, tt.scope, r.Header.Get("WWW-Authenticate"))
		}
		granted := token(tt.scope)
		if r := e.Do(tt.method, tt.path, granted, tt.body); r.Status >= 400 {
			t.Errorf("%s %s with %s: %d %s", tt.method, tt.path, tt.scope, r.Status, r.Raw)
		}
	}
}

func TestTokenEndpointDetails(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	a := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{})
	a.Conf.Scopes = []string{"profile", "offline_access"}
	ctx := context.Background()

	// client_secret_post works as well as client_secret_basic.
	a.Conf.Endpoint.AuthStyle = oauth2.AuthStyleInParams
	verifier := oauth2.GenerateVerifier()
	tok, err := a.Conf.Exchange(ctx, e.CodeFor(a, oauth2.S256ChallengeOption(verifier)), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("client_secret_post: %v", err)
	}
	// A wrong secret is invalid_client.
	wrong := *a.Conf
	wrong.ClientSecret = "cs_wrong"
	verifier = oauth2.GenerateVerifier()
	if _, err := wrong.Exchange(ctx, e.CodeFor(a, oauth2.S256ChallengeOption(verifier)), oauth2.VerifierOption(verifier)); apptest.OAuthError(err) != "invalid_client" && apptest.OAuthError(err) != "unauthorized_client" {
		t.Fatalf("wrong secret: %v", err)
	}

	// Revoking the refresh token ends the grant's access tokens too.
	res, err := http.PostForm(e.Srv.URL+"/oauth/revoke", url.Values{"token": {tok.RefreshToken}, "token_type_hint": {"refresh_token"},
		"client_id": {a.Conf.ClientID}, "client_secret": {a.Conf.ClientSecret}})
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("revoke refresh token: %v %v", res, err)
	}
	res.Body.Close()
	if res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("revocation response Cache-Control %q", res.Header.Get("Cache-Control"))
	}
	e.Do("GET", "/me", tok.AccessToken, nil).Must(t, http.StatusUnauthorized)

	// Guessing at the token endpoint is slowed down: 30 failures at once,
	// then 30 a minute; the wrong secret above was the first.
	last := apptest.Throttled(t, 29, 30, func() apptest.Response {
		res, err := http.PostForm(e.Srv.URL+"/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {"guess"},
			"client_id": {a.Conf.ClientID}, "client_secret": {"cs_guess"}, "redirect_uri": {apptest.TestRedirect}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return apptest.Response{Status: res.StatusCode, Header: res.Header}
	})
	if last.Header.Get("Retry-After") == "" {
		t.Fatal("a refused token request without Retry-After")
	}
}

func TestJWTBearerMetrics(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	e.ServiceAccountToken(tn, tenancy.RoleTeacher, "users:read")
	metrics := string(e.Do("GET", "/metrics", "", nil).Raw)
	if !strings.Contains(metrics, `grant_type="jwt_bearer",org="`+tn.Org.ID+`"} 1`) {
		t.Fatalf("no jwt_bearer token counted for %s", tn.Org.ID)
	}
}

// TestRefreshTokenWithoutOfflineAccess checks spec 2.8: the code exchange
// returns a 30-day refresh token whether or not offline_access was asked
// for, and that refresh token works.
func TestRefreshTokenWithoutOfflineAccess(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	a := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{})
	a.Conf.Scopes = []string{"profile", "users:read"}
	tok := e.Token(a)
	if tok.RefreshToken == "" {
		t.Fatalf("no refresh token without offline_access: %+v", tok)
	}
	if scope, _ := tok.Extra("scope").(string); !strings.Contains(scope, "offline_access") || !strings.Contains(scope, "users:read") {
		t.Fatalf("granted scope %q does not say offline access was granted", scope)
	}
	next, err := a.Conf.TokenSource(context.Background(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil || next.AccessToken == "" || next.RefreshToken == "" {
		t.Fatalf("refresh: %v %+v", err, next)
	}
	e.Do("GET", "/me", next.AccessToken, nil).Must(t, http.StatusOK)
}

// TestDiscoveryAdvertisesAcceptedGrants posts every grant type discovery
// advertises to the token endpoint (none may be unsupported_grant_type),
// and checks grants the endpoint refuses (unsupported, or not allowed to
// any client) are not advertised.
func TestDiscoveryAdvertisesAcceptedGrants(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	var d struct {
		Grants        []string `json:"grant_types_supported"`
		ResponseTypes []string `json:"response_types_supported"`
	}
	res, err := http.Get(e.Srv.URL + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	if strings.Join(d.ResponseTypes, " ") != "code" {
		t.Errorf("response_types_supported = %v, want only code", d.ResponseTypes)
	}
	// A registered client authenticates, so only the grant type decides.
	a := e.NewOAuthApp(e.NewTenant("US", "pro"), tenancy.RoleTeacher, clients.ClientInput{})
	tokenError := func(grant string) string {
		res, err := http.PostForm(e.Srv.URL+"/oauth/token", url.Values{"grant_type": {grant},
			"client_id": {a.Conf.ClientID}, "client_secret": {a.Conf.ClientSecret}})
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body struct {
			Error string `json:"error"`
		}
		_ = json.NewDecoder(res.Body).Decode(&body)
		return body.Error
	}
	for _, g := range []string{"authorization_code", "refresh_token", string(oidc.GrantTypeBearer)} {
		if !slices.Contains(d.Grants, g) {
			t.Errorf("grant %s is accepted but not advertised: %v", g, d.Grants)
		}
	}
	for _, g := range d.Grants {
		if got := tokenError(g); got == "unsupported_grant_type" || got == "" {
			t.Errorf("advertised grant %s: token endpoint error %q", g, got)
		}
	}
	for _, g := range []string{"implicit", "client_credentials", string(oidc.GrantTypeTokenExchange), string(oidc.GrantTypeDeviceCode)} {
		if slices.Contains(d.Grants, g) {
			t.Errorf("grant %s is advertised", g)
		}
		if got := tokenError(g); got != "unsupported_grant_type" && got != "unauthorized_client" {
			t.Errorf("grant %s: token endpoint error %q, want it refused", g, got)
		}
	}
}

// lockedBuffer collects log output written from the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAStaleCallbackIsTheClientsMistake: the authorization callback
// reached with an unknown, expired or malformed request id is a 400 that
// the library logs as a warning, not a server error that pages operators.
func TestAStaleCallbackIsTheClientsMistake(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	var logs lockedBuffer
	previous := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(previous) })

	for _, id := range []string{"arq_01M8F6J4FAQ9H8JPSCMAT749CQ", "arq_\x00", "nonsense", ""} {
		p := e.NewBrowser().Get(e.Srv.URL + "/oauth/authorize/callback?" + url.Values{"id": {id}}.Encode())
		if p.Status != http.StatusBadRequest {
			t.Errorf("callback for %q: %d %s", id, p.Status, p.Body)
		}
	}
	if strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Fatalf("logged as errors:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "unknown or expired authorization request") {
		t.Fatalf("the refusals were not logged:\n%s", logs.String())
	}
}
