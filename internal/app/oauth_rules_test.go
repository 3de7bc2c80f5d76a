package app_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"golang.org/x/oauth2"

	"github.com/assessd/assessd/internal/identity"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

func TestDiscovery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res, err := http.Get(e.srv.URL + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var d map[string]any
	if err := json.NewDecoder(res.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"issuer": e.srv.URL, "authorization_endpoint": e.srv.URL + "/oauth/authorize", "token_endpoint": e.srv.URL + "/oauth/token",
		"revocation_endpoint": e.srv.URL + "/oauth/revoke", "introspection_endpoint": e.srv.URL + "/oauth/introspect",
		"userinfo_endpoint": e.srv.URL + "/oauth/userinfo", "jwks_uri": e.srv.URL + "/oauth/keys",
	}
	for k, v := range want {
		if d[k] != v {
			t.Errorf("%s = %v, want %s", k, d[k], v)
		}
	}
	if !strings.Contains(toJSON(d["code_challenge_methods_supported"]), "S256") || !strings.Contains(toJSON(d["scopes_supported"]), "audit-logs:write") {
		t.Errorf("discovery lacks S256 or the API scopes: %v", d)
	}
	keys := e.do("GET", "/oauth/keys", "", nil).must(t, http.StatusOK)
	if n := len(keys.body["keys"].([]any)); n < 1 {
		t.Fatalf("JWKS has %d keys", n)
	}
}

func toJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestDenyAndRedirectMismatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	a := e.newOAuthApp(tn, tenancy.RoleTeacher, identity.ClientInput{})
	a.conf.Scopes = []string{"openid", "profile"}

	back := e.authorize(e.newBrowser(), a, "deny", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
	if back.Query().Get("error") != "access_denied" || back.Query().Get("state") != "state-123" || back.Query().Get("code") != "" {
		t.Fatalf("deny redirected to %s", back)
	}

	// An unregistered redirect URI gets an error page, never a redirect.
	evil := *a.conf
	evil.RedirectURL = "https://evil.example/callback"
	p := e.newBrowser().get(evil.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	if p.status < 400 || p.location != "" || strings.HasPrefix(p.url.String(), "https://evil.example") {
		t.Fatalf("redirect mismatch: status %d, location %q, url %s", p.status, p.location, p.url)
	}

	// An unknown client, well formed or not, is the caller's mistake: a 400
	// naming it, never a redirect or a server error.
	for _, id := range []string{"cli_01M8F6J4FAQ9H8JPSCMAT749CQ", "../../etc/passwd", strings.Repeat("x", 300), "cli_\x00"} {
		unknown := *a.conf
		unknown.ClientID = id
		p := e.newBrowser().get(unknown.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		if p.status != http.StatusBadRequest || p.location != "" || !strings.Contains(p.body, `"error":"invalid_client"`) {
			t.Fatalf("unknown client %q: status %d, location %q\n%s", id, p.status, p.location, p.body)
		}
		out := e.newBrowser().get(e.srv.URL + "/oauth/logout?" + url.Values{"client_id": {id}}.Encode())
		if out.status != http.StatusBadRequest || !strings.Contains(out.body, `"error":"invalid_client"`) {
			t.Fatalf("sign-out for unknown client %q: status %d\n%s", id, out.status, out.body)
		}
	}
}

// token runs the browser flow with PKCE and exchanges the code.
func (e *env) token(a *oauthApp) *oauth2.Token {
	e.t.Helper()
	verifier := oauth2.GenerateVerifier()
	tok, err := a.conf.Exchange(context.Background(), e.codeFor(a, oauth2.S256ChallengeOption(verifier)), oauth2.VerifierOption(verifier))
	if err != nil {
		e.t.Fatalf("exchange: %v", err)
	}
	return tok
}

// codeFor runs the browser flow and returns a fresh authorization code.
func (e *env) codeFor(a *oauthApp, opts ...oauth2.AuthCodeOption) string {
	e.t.Helper()
	return e.authorize(e.newBrowser(), a, "approve", opts...).Query().Get("code")
}

func TestCodeAndRefreshReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	a := e.newOAuthApp(tn, tenancy.RoleTeacher, identity.ClientInput{})
	a.conf.Scopes = []string{"profile", "offline_access"}
	ctx := context.Background()

	verifier := oauth2.GenerateVerifier()
	code := e.codeFor(a, oauth2.S256ChallengeOption(verifier))
	tok, err := a.conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if tok.Extra("id_token") != nil {
		t.Fatalf("id_token issued without openid: %v", tok.Extra("id_token"))
	}
	e.do("GET", "/me", tok.AccessToken, nil).must(t, http.StatusOK)
	// Reusing the code fails and revokes what it produced.
	if _, err := a.conf.Exchange(ctx, code, oauth2.VerifierOption(verifier)); oauthError(err) != "invalid_grant" {
		t.Fatalf("code reuse: %v", err)
	}
	e.do("GET", "/me", tok.AccessToken, nil).must(t, http.StatusUnauthorized)

	// Reusing a rotated refresh token revokes the whole family.
	tok = e.token(a)
	next, err := a.conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); oauthError(err) != "invalid_grant" {
		t.Fatalf("refresh reuse: %v", err)
	}
	e.do("GET", "/me", next.AccessToken, nil).must(t, http.StatusUnauthorized)
	if _, err := a.conf.TokenSource(ctx, &oauth2.Token{RefreshToken: next.RefreshToken}).Token(); oauthError(err) != "invalid_grant" {
		t.Fatalf("refresh of a revoked family: %v", err)
	}
}

func TestPKCERules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	a := e.newOAuthApp(tn, tenancy.RoleTeacher, identity.ClientInput{})
	a.conf.Scopes = []string{"profile"}
	ctx := context.Background()

	verifier := oauth2.GenerateVerifier()
	code := e.codeFor(a, oauth2.S256ChallengeOption(verifier))
	if _, err := a.conf.Exchange(ctx, code, oauth2.VerifierOption(oauth2.GenerateVerifier())); oauthError(err) != "invalid_grant" {
		t.Fatalf("wrong verifier: %v", err)
	}
	code = e.codeFor(a, oauth2.S256ChallengeOption(verifier))
	if _, err := a.conf.Exchange(ctx, code); oauthError(err) != "invalid_grant" {
		t.Fatalf("missing verifier: %v", err)
	}

	// A public client has no secret and must use PKCE.
	pub := e.newOAuthApp(e.newTenant("FR", "pro"), tenancy.RoleStudent, identity.ClientInput{Name: "Mobile", Public: true})
	pub.conf.Scopes = []string{"openid", "profile"}
	if pub.conf.ClientSecret != "" {
		t.Fatal("public client got a secret")
	}
	p := e.newBrowser().get(pub.conf.AuthCodeURL("s"))
	if loc, _ := url.Parse(p.location); p.status != http.StatusFound || loc == nil || loc.Query().Get("error") != "invalid_request" {
		t.Fatalf("public client without PKCE: %d %s", p.status, p.location)
	}
	p = e.newBrowser().get(pub.conf.AuthCodeURL("s", oauth2.SetAuthURLParam("code_challenge", "abc"), oauth2.SetAuthURLParam("code_challenge_method", "plain")))
	if loc, _ := url.Parse(p.location); loc == nil || loc.Query().Get("error") != "invalid_request" {
		t.Fatalf("plain PKCE: %d %s", p.status, p.location)
	}
	verifier = oauth2.GenerateVerifier()
	tok, err := pub.conf.Exchange(ctx, e.codeFor(pub, oauth2.S256ChallengeOption(verifier)), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("public client exchange: %v", err)
	}
	e.do("GET", "/me", tok.AccessToken, nil).must(t, http.StatusOK)
}

func TestExpiredAccessToken(t *testing.T) {
	t.Parallel()
	now := time.Now()
	e := newEnvWithClock(t, func() time.Time { return now })
	tn := e.newTenant("US", "pro")
	a := e.newOAuthApp(tn, tenancy.RoleTeacher, identity.ClientInput{})
	a.conf.Scopes = []string{"profile", "offline_access"}
	tok := e.token(a)
	now = now.Add(identity.AccessTokenTTL - time.Minute)
	e.do("GET", "/me", tok.AccessToken, nil).must(t, http.StatusOK)
	now = now.Add(2 * time.Minute)
	e.do("GET", "/me", tok.AccessToken, nil).must(t, http.StatusUnauthorized)
	// The refresh token (30 days) replaces it.
	fresh, err := a.conf.TokenSource(context.Background(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatal(err)
	}
	e.do("GET", "/me", fresh.AccessToken, nil).must(t, http.StatusOK)
	now = now.Add(identity.RefreshTokenTTL)
	if _, err := a.conf.TokenSource(context.Background(), &oauth2.Token{RefreshToken: fresh.RefreshToken}).Token(); oauthError(err) != "invalid_grant" {
		t.Fatalf("expired refresh token: %v", err)
	}
}

func TestAuditLogWriteByCallerKind(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	entry := `{"action":"grade.synced","target":{"type":"exam","id":"exm_42"},"reason":"nightly sync","after":{"grades":12}}`

	// An app its organization allowed receives audit-logs:write and may write.
	a := e.newOAuthApp(tn, tenancy.RoleTeacher, identity.ClientInput{Scopes: []string{"profile", "audit-logs:write"}, AllowAuditLogsWrite: true})
	a.conf.Scopes = []string{"profile", "audit-logs:write"}
	tok := e.token(a)
	if !strings.Contains(tok.Extra("scope").(string), "audit-logs:write") {
		t.Fatalf("allowed client was not granted audit-logs:write: %v", tok.Extra("scope"))
	}
	r := e.do("POST", "/audit-logs", tok.AccessToken, entry).must(t, http.StatusOK)
	actor := r.body["actor"].(map[string]any)
	if r.body["origin"] != "app" || actor["id"] != a.user.ID || actor["clientId"] != a.client.ID || actor["kind"] != "user" {
		t.Fatalf("app entry = %s", r.raw)
	}
	listed := e.do("GET", "/audit-logs?action=grade.synced", tn.keys[tenancy.RoleOwner], nil).must(t, http.StatusOK)
	if n := len(listed.body["auditLogs"].([]any)); n != 1 {
		t.Fatalf("the app's entry is not in the timeline: %s", listed.raw)
	}
	e.do("POST", "/audit-logs", tok.AccessToken, `{"action":"Bad Action","target":{"type":"exam","id":"x"}}`).must(t, http.StatusBadRequest)
	e.do("POST", "/audit-logs", tok.AccessToken, `{"action":"grade.synced"}`).must(t, http.StatusBadRequest)

	// An API key is refused; so is a service account's JWT.
	if r := e.do("POST", "/audit-logs", tn.keys[tenancy.RoleOwner], entry).must(t, http.StatusForbidden); r.reason() != "CALLER_KIND_NOT_ALLOWED" {
		t.Fatalf("API key: %s", r.raw)
	}
	jwt := e.serviceAccountToken(tn, tenancy.RoleAdmin, "")
	if r := e.do("POST", "/audit-logs", jwt, entry).must(t, http.StatusForbidden); r.reason() != "CALLER_KIND_NOT_ALLOWED" {
		t.Fatalf("JWT caller: %s", r.raw)
	}
}

// serviceAccountToken creates a service account with a fresh key and
// exchanges a signed assertion for a JWT access token (RFC 7523).
func (e *env) serviceAccountToken(tn tenant, role tenancy.Role, scope string) string {
	e.t.Helper()
	sa := e.newServiceAccount(tn, role)
	status, tok, code := e.exchangeAssertion(sa, sa.addKey(e), scope)
	if status != http.StatusOK || tok == "" {
		e.t.Fatalf("jwt-bearer grant: %d %s", status, code)
	}
	return tok
}

// serviceAccount is a service account the test signs assertions for.
type serviceAccount struct {
	identity.ServiceAccount
	ctx context.Context // the organization's system caller
}

// signingKey is a service account's registered key and its private half.
type signingKey struct {
	id      string
	private *rsa.PrivateKey
}

func (e *env) newServiceAccount(tn tenant, role tenancy.Role) serviceAccount {
	e.t.Helper()
	ctx := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.org.ID))
	sa, err := e.app.Identity.CreateServiceAccount(ctx, "sync bot", role)
	if err != nil {
		e.t.Fatal(err)
	}
	return serviceAccount{sa, ctx}
}

// addKey registers a fresh RSA key for the account.
func (sa serviceAccount) addKey(e *env) signingKey {
	e.t.Helper()
	key, err := sa.tryAddKey(e)
	if err != nil {
		e.t.Fatal(err)
	}
	return key
}

func (sa serviceAccount) tryAddKey(e *env) (signingKey, error) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	keyID, err := e.app.Identity.AddServiceAccountKey(sa.ctx, sa.ID, string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})))
	return signingKey{keyID, key}, err
}

// exchangeAssertion signs an assertion with key and posts it to the token
// endpoint: the status, then the access token or the error code.
func (e *env) exchangeAssertion(sa serviceAccount, key signingKey, scope string) (status int, token, errorCode string) {
	e.t.Helper()
	form := url.Values{"grant_type": {string(oidc.GrantTypeBearer)}, "assertion": {e.assertion(sa, key)}}
	if scope != "" {
		form.Set("scope", scope)
	}
	res, err := http.PostForm(e.srv.URL+"/oauth/token", form)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
	}
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out.AccessToken, out.Error
}

// assertion is a JWT assertion (RFC 7523) for the account, signed with key.
func (e *env) assertion(sa serviceAccount, key signingKey) string {
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key.private}, (&jose.SignerOptions{}).WithHeader("kid", key.id))
	now := time.Now()
	claims, _ := json.Marshal(map[string]any{"iss": sa.ID, "sub": sa.ID, "aud": e.srv.URL, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix()})
	sig, _ := signer.Sign(claims)
	assertion, _ := sig.CompactSerialize()
	return assertion
}

// signedInServiceAccount starts an environment with a teacher service
// account of a new organization and a key of it, checks that the token its
// assertion obtains reads /users, and returns them with a second
// organization's system caller.
func signedInServiceAccount(t *testing.T) (e *env, tn tenant, sa serviceAccount, key signingKey, jwt string, foreign context.Context) {
	e = newEnv(t)
	tn, other := e.newTenant("US", "pro"), e.newTenant("DE", "pro")
	sa = e.newServiceAccount(tn, tenancy.RoleTeacher)
	key = sa.addKey(e)
	_, jwt, _ = e.exchangeAssertion(sa, key, "users:read")
	e.do("GET", "/users", jwt, nil).must(t, http.StatusOK)
	return e, tn, sa, key, jwt, tenancy.WithCaller(context.Background(), tenancy.SystemCaller(other.org.ID))
}

// TestServiceAccountRevocation: a revoked key obtains no token while the
// tokens it obtained run out their hour; a disabled account's tokens are
// refused at once and work again once it is enabled; an account holds at
// most MaxServiceAccountKeys active keys, and revoking one makes room.
func TestServiceAccountRevocation(t *testing.T) {
	t.Parallel()
	e, tn, sa, key, jwt, foreign := signedInServiceAccount(t)
	if err := e.app.Identity.RevokeServiceAccountKey(foreign, key.id); !errs.Is(err, errs.KindNotFound) {
		t.Fatalf("another organization revoking the key: %v, want not found", err)
	}
	if err := e.app.Identity.SetServiceAccountDisabled(foreign, sa.ID, true); !errs.Is(err, errs.KindNotFound) {
		t.Fatalf("another organization disabling the account: %v, want not found", err)
	}
	e.do("GET", "/users", jwt, nil).must(t, http.StatusOK)

	if err := e.app.Identity.RevokeServiceAccountKey(sa.ctx, key.id); err != nil {
		t.Fatal(err)
	}
	// RFC 7523, section 3.1: an assertion that does not verify is invalid_grant.
	if status, tok, code := e.exchangeAssertion(sa, key, "users:read"); status != http.StatusBadRequest || tok != "" || code != "invalid_grant" {
		t.Fatalf("a revoked key: %d %q, want 400 invalid_grant", status, code)
	}
	e.do("GET", "/users", jwt, nil).must(t, http.StatusOK)

	if err := e.app.Identity.SetServiceAccountDisabled(sa.ctx, sa.ID, true); err != nil {
		t.Fatal(err)
	}
	e.do("GET", "/users", jwt, nil).must(t, http.StatusUnauthorized)
	if err := e.app.Identity.SetServiceAccountDisabled(sa.ctx, sa.ID, false); err != nil {
		t.Fatal(err)
	}
	e.do("GET", "/users", jwt, nil).must(t, http.StatusOK)

	for range identity.MaxServiceAccountKeys {
		key = sa.addKey(e)
	}
	if _, err := sa.tryAddKey(e); !isConflict(err, "SERVICE_ACCOUNT_KEY_LIMIT") {
		t.Fatalf("key %d: %v, want SERVICE_ACCOUNT_KEY_LIMIT", identity.MaxServiceAccountKeys+1, err)
	}
	keys, err := e.app.Identity.ServiceAccountKeys(sa.ctx, sa.ID)
	if err != nil || len(keys) != identity.MaxServiceAccountKeys+1 || keys[0].ID != key.id || keys[len(keys)-1].RevokedAt == nil {
		t.Fatalf("keys: %v %+v, want the %d active newest first and the revoked one last", err, keys, identity.MaxServiceAccountKeys)
	}
	if err := e.app.Identity.RevokeServiceAccountKey(sa.ctx, key.id); err != nil {
		t.Fatal(err)
	}
	sa.addKey(e)

	logged := e.do("GET", "/audit-logs?targetId="+sa.ID, tn.keys[tenancy.RoleOwner], nil).must(t, http.StatusOK)
	for _, action := range []string{"service_account.key_revoked", "service_account.disabled", "service_account.enabled"} {
		if !strings.Contains(string(logged.raw), `"`+action+`"`) {
			t.Errorf("no %s entry: %s", action, logged.raw)
		}
	}
}

// TestServiceAccountDeletion: a deleted account's tokens and keys are
// refused at once, the deletion is audited, and an organization holds at
// most MaxServiceAccounts accounts, deleting one making room.
func TestServiceAccountDeletion(t *testing.T) {
	t.Parallel()
	e, tn, sa, key, jwt, foreign := signedInServiceAccount(t)
	if err := e.app.Identity.DeleteServiceAccount(foreign, sa.ID); !errs.Is(err, errs.KindNotFound) {
		t.Fatalf("another organization deleting the account: %v, want not found", err)
	}
	e.do("GET", "/users", jwt, nil).must(t, http.StatusOK)

	if err := e.app.Identity.DeleteServiceAccount(sa.ctx, sa.ID); err != nil {
		t.Fatal(err)
	}
	e.do("GET", "/users", jwt, nil).must(t, http.StatusUnauthorized)
	if status, tok, code := e.exchangeAssertion(sa, key, "users:read"); status != http.StatusBadRequest || tok != "" || code != "invalid_grant" {
		t.Fatalf("a deleted account's key: %d %q, want 400 invalid_grant", status, code)
	}
	if err := e.app.Identity.DeleteServiceAccount(sa.ctx, sa.ID); !errs.Is(err, errs.KindNotFound) {
		t.Fatalf("deleting it again: %v, want not found", err)
	}
	if _, err := e.app.Identity.ServiceAccountKeys(sa.ctx, sa.ID); !errs.Is(err, errs.KindNotFound) {
		t.Fatalf("its keys: %v, want not found", err)
	}
	logged := e.do("GET", "/audit-logs?action=service_account.deleted&targetId="+sa.ID, tn.keys[tenancy.RoleOwner], nil).must(t, http.StatusOK)
	if !strings.Contains(string(logged.raw), `"sync bot"`) {
		t.Errorf("no service_account.deleted entry naming the account: %s", logged.raw)
	}

	var last identity.ServiceAccount
	for range identity.MaxServiceAccounts {
		last = e.newServiceAccount(tn, tenancy.RoleStudent).ServiceAccount
	}
	if _, err := e.app.Identity.CreateServiceAccount(sa.ctx, "one too many", tenancy.RoleStudent); !isConflict(err, "SERVICE_ACCOUNT_LIMIT") {
		t.Fatalf("service account %d: %v, want SERVICE_ACCOUNT_LIMIT", identity.MaxServiceAccounts+1, err)
	}
	if _, err := e.app.Identity.CreateServiceAccount(foreign, "another organization's", tenancy.RoleStudent); err != nil {
		t.Fatalf("another organization is under its own bound: %v", err)
	}
	if err := e.app.Identity.DeleteServiceAccount(sa.ctx, last.ID); err != nil {
		t.Fatal(err)
	}
	e.newServiceAccount(tn, tenancy.RoleStudent)
}

// TestServiceAccountKeyRacingItsAccountsDeletion adds a key while its
// account's deletion commits: the account is not found, as it would be a
// moment later, rather than a server fault.
func TestServiceAccountKeyRacingItsAccountsDeletion(t *testing.T) {
	t.Parallel()
	url := storetest.NewURL(t)
	e := newEnvAt(t, url)
	sa := e.newServiceAccount(e.newTenant("US", "pro"), tenancy.RoleTeacher)
	err := storetest.DeleteDuring(t, url, `DELETE FROM service_accounts WHERE id = $1`, []any{sa.ID}, func() error {
		_, err := sa.tryAddKey(e)
		return err
	})
	if !errs.Is(err, errs.KindNotFound) {
		t.Fatalf("adding a key as its account is deleted: %v, want not found", err)
	}
}

func isConflict(err error, reason string) bool {
	e, ok := errs.As(err)
	return ok && e.Kind == errs.KindConflict && e.Reason == reason
}

func TestServiceAccountJWT(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn, other := e.newTenant("US", "pro"), e.newTenant("DE", "pro")
	jwt := e.serviceAccountToken(tn, tenancy.RoleTeacher, "users:read exams:read")
	if parts := strings.Split(jwt, "."); len(parts) != 3 {
		t.Fatalf("service account token is not a JWT: %q", jwt)
	}
	list := e.do("GET", "/users", jwt, nil).must(t, http.StatusOK)
	if n := len(list.body["users"].([]any)); n != 4 {
		t.Fatalf("service account sees %d users, want its organization's 4", n)
	}
	e.do("GET", "/users/"+other.users[tenancy.RoleOwner].ID, jwt, nil).must(t, http.StatusNotFound)
	if r := e.do("GET", "/org", jwt, nil).must(t, http.StatusForbidden); r.reason() != "INSUFFICIENT_SCOPE" {
		t.Fatalf("scope not requested: %s", r.raw)
	}
	if r := e.do("GET", "/me", jwt, nil).must(t, http.StatusForbidden); r.reason() != "INSUFFICIENT_SCOPE" && r.reason() != "CALLER_KIND_NOT_ALLOWED" {
		t.Fatalf("GET /me as a service account: %s", r.raw)
	}
	tampered := jwt[:len(jwt)-4] + "AAAA"
	e.do("GET", "/users", tampered, nil).must(t, http.StatusUnauthorized)
}

func TestIntrospectionAndUserinfo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	a := e.newOAuthApp(tn, tenancy.RoleTeacher, identity.ClientInput{})
	a.conf.Scopes = []string{"openid", "profile"}
	tok := e.token(a)
	introspect := func(token, clientID, secret string) map[string]any {
		req, _ := http.NewRequest("POST", e.srv.URL+"/oauth/introspect", strings.NewReader(url.Values{"token": {token}}.Encode()))
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
	got := introspect(tok.AccessToken, a.conf.ClientID, a.conf.ClientSecret)
	if got["active"] != true || got["sub"] != a.user.ID || got["client_id"] != a.client.ID || got["org_id"] != tn.org.ID {
		t.Fatalf("introspection of a live token = %v", got)
	}
	if got := introspect(tok.AccessToken, a.conf.ClientID, "wrong"); got["_status"] != http.StatusUnauthorized && got["active"] == true {
		t.Fatalf("introspection with a wrong secret = %v", got)
	}
	if got := introspect("garbage", a.conf.ClientID, a.conf.ClientSecret); got["active"] == true {
		t.Fatalf("introspection of garbage = %v", got)
	}

	status, info, _ := e.userinfo(tok.AccessToken)
	if status != http.StatusOK || info["sub"] != a.user.ID || info["name"] != "Signing In" || info["email"] != nil {
		t.Fatalf("userinfo with openid profile = %d %v (email must need the email scope)", status, info)
	}

	// A token that is no longer good is 401 with RFC 6750's challenge, for
	// the app to sign the user in again, whether it is garbage or was
	// revoked; no token at all gets the bare challenge.
	const invalidToken = `Bearer realm="assessd", error="invalid_token"`
	if status, info, challenge := e.userinfo("garbage"); status != http.StatusUnauthorized || challenge != invalidToken {
		t.Errorf("userinfo with garbage = %d %v (WWW-Authenticate %q), want 401 %s", status, info, challenge, invalidToken)
	}
	if status, _, challenge := e.userinfo(""); status != http.StatusUnauthorized || challenge != `Bearer realm="assessd"` {
		t.Errorf("userinfo without a token = %d (WWW-Authenticate %q), want 401 with the bare challenge", status, challenge)
	}
	res, err := http.PostForm(e.srv.URL+"/oauth/revoke", url.Values{"token": {tok.AccessToken}, "client_id": {a.conf.ClientID}, "client_secret": {a.conf.ClientSecret}})
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %v %v", res, err)
	}
	res.Body.Close()
	if status, info, challenge := e.userinfo(tok.AccessToken); status != http.StatusUnauthorized || info["error"] != "access_denied" || challenge != invalidToken {
		t.Errorf("userinfo with a revoked token = %d %v (WWW-Authenticate %q), want 401 access_denied %s", status, info, challenge, invalidToken)
	}
}

// userinfo calls the OIDC userinfo endpoint with an access token ("" sends
// none): the status, the body and the WWW-Authenticate challenge.
func (e *env) userinfo(accessToken string) (int, map[string]any, string) {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.srv.URL+"/oauth/userinfo", nil)
	if accessToken != "" {
		req.Header.Set("Authorization", "Bearer "+accessToken)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	var info map[string]any
	_ = json.NewDecoder(res.Body).Decode(&info)
	return res.StatusCode, info, res.Header.Get("WWW-Authenticate")
}

func TestLoginPageProtections(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	a := e.newOAuthApp(tn, tenancy.RoleTeacher, identity.ClientInput{})
	b := e.newBrowser()
	login := b.get(e.srv.URL + "/login")
	if login.status != http.StatusOK || !strings.Contains(login.body, `name="email"`) || !strings.Contains(login.body, `name="password"`) {
		t.Fatalf("login page: %d", login.status)
	}
	// Without the CSRF token the form is refused.
	if p := b.post(e.srv.URL+"/login", url.Values{"email": {a.email}, "password": {a.password}}); p.status != http.StatusForbidden {
		t.Fatalf("login without CSRF token: %d", p.status)
	}
	// Repeated failures from one address are slowed down: 10 at once, then
	// one every 12 s (5 a minute). Each failure costs a password hash, slow
	// under the race detector on a busy machine, so the refills the attempts
	// took time for are allowed too.
	var last page
	start, tries := time.Now(), 0
	for last.status != http.StatusTooManyRequests && tries < 40 {
		page := b.get(e.srv.URL + "/login")
		last = b.post(e.srv.URL+"/login", url.Values{"csrf": {page.field("csrf")}, "email": {a.email}, "password": {"wrong password"}})
		tries++
	}
	refilled := int(time.Since(start) / (12 * time.Second))
	if last.status != http.StatusTooManyRequests || tries <= 10 || tries > 11+refilled {
		t.Fatalf("failed login %d answered %d, want the first 429 at attempt 11 (up to %d after %d refills)", tries, last.status, 11+refilled, refilled)
	}
	res, _ := http.Get(e.srv.URL + "/login")
	res.Body.Close()
	if res.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(res.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Fatalf("login page can be framed: %v", res.Header)
	}
}

func TestTokenScopesPerEndpointFamily(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	a := e.newOAuthApp(tn, tenancy.RoleAdmin, identity.ClientInput{})
	token := func(scopes ...string) string {
		a.conf.Scopes = scopes
		return e.token(a).AccessToken
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
		r := e.do(tt.method, tt.path, profileOnly, tt.body).must(t, http.StatusForbidden)
		if !strings.Contains(r.header.Get("WWW-Authenticate"), `scope="`+tt.scope+`"`) {
			t.Errorf("%s %s without %s: WWW-Authenticate %q", tt.method, tt.path, tt.scope, r.header.Get("WWW-Authenticate"))
		}
		granted := token(tt.scope)
		if r := e.do(tt.method, tt.path, granted, tt.body); r.status >= 400 {
			t.Errorf("%s %s with %s: %d %s", tt.method, tt.path, tt.scope, r.status, r.raw)
		}
	}
}

func TestTokenEndpointDetails(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	a := e.newOAuthApp(tn, tenancy.RoleTeacher, identity.ClientInput{})
	a.conf.Scopes = []string{"profile", "offline_access"}
	ctx := context.Background()

	// client_secret_post works as well as client_secret_basic.
	a.conf.Endpoint.AuthStyle = oauth2.AuthStyleInParams
	verifier := oauth2.GenerateVerifier()
	tok, err := a.conf.Exchange(ctx, e.codeFor(a, oauth2.S256ChallengeOption(verifier)), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("client_secret_post: %v", err)
	}
	// A wrong secret is invalid_client.
	wrong := *a.conf
	wrong.ClientSecret = "cs_wrong"
	verifier = oauth2.GenerateVerifier()
	if _, err := wrong.Exchange(ctx, e.codeFor(a, oauth2.S256ChallengeOption(verifier)), oauth2.VerifierOption(verifier)); oauthError(err) != "invalid_client" && oauthError(err) != "unauthorized_client" {
		t.Fatalf("wrong secret: %v", err)
	}

	// Revoking the refresh token ends the grant's access tokens too.
	res, err := http.PostForm(e.srv.URL+"/oauth/revoke", url.Values{"token": {tok.RefreshToken}, "token_type_hint": {"refresh_token"},
		"client_id": {a.conf.ClientID}, "client_secret": {a.conf.ClientSecret}})
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("revoke refresh token: %v %v", res, err)
	}
	res.Body.Close()
	if res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("revocation response Cache-Control %q", res.Header.Get("Cache-Control"))
	}
	e.do("GET", "/me", tok.AccessToken, nil).must(t, http.StatusUnauthorized)

	// Guessing at the token endpoint is slowed down: 30 failures at once,
	// then 30 a minute; the wrong secret above was the first.
	last := throttled(t, 29, 30, func() response {
		res, err := http.PostForm(e.srv.URL+"/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {"guess"},
			"client_id": {a.conf.ClientID}, "client_secret": {"cs_guess"}, "redirect_uri": {testRedirect}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return response{status: res.StatusCode, header: res.Header}
	})
	if last.header.Get("Retry-After") == "" {
		t.Fatal("a refused token request without Retry-After")
	}
}

func TestJWTBearerMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	e.serviceAccountToken(tn, tenancy.RoleTeacher, "users:read")
	metrics := string(e.do("GET", "/metrics", "", nil).raw)
	if !strings.Contains(metrics, `grant_type="jwt_bearer",org="`+tn.org.ID+`"} 1`) {
		t.Fatalf("no jwt_bearer token counted for %s", tn.org.ID)
	}
}

// TestRefreshTokenWithoutOfflineAccess checks spec 2.8: the code exchange
// returns a 30-day refresh token whether or not offline_access was asked
// for, and that refresh token works.
func TestRefreshTokenWithoutOfflineAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	a := e.newOAuthApp(tn, tenancy.RoleTeacher, identity.ClientInput{})
	a.conf.Scopes = []string{"profile", "users:read"}
	tok := e.token(a)
	if tok.RefreshToken == "" {
		t.Fatalf("no refresh token without offline_access: %+v", tok)
	}
	if scope, _ := tok.Extra("scope").(string); !strings.Contains(scope, "offline_access") || !strings.Contains(scope, "users:read") {
		t.Fatalf("granted scope %q does not say offline access was granted", scope)
	}
	next, err := a.conf.TokenSource(context.Background(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil || next.AccessToken == "" || next.RefreshToken == "" {
		t.Fatalf("refresh: %v %+v", err, next)
	}
	e.do("GET", "/me", next.AccessToken, nil).must(t, http.StatusOK)
}

// TestDiscoveryAdvertisesAcceptedGrants posts every grant type discovery
// advertises to the token endpoint (none may be unsupported_grant_type),
// and checks grants the endpoint refuses (unsupported, or not allowed to
// any client) are not advertised.
func TestDiscoveryAdvertisesAcceptedGrants(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var d struct {
		Grants        []string `json:"grant_types_supported"`
		ResponseTypes []string `json:"response_types_supported"`
	}
	res, err := http.Get(e.srv.URL + "/.well-known/openid-configuration")
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
	a := e.newOAuthApp(e.newTenant("US", "pro"), tenancy.RoleTeacher, identity.ClientInput{})
	tokenError := func(grant string) string {
		res, err := http.PostForm(e.srv.URL+"/oauth/token", url.Values{"grant_type": {grant},
			"client_id": {a.conf.ClientID}, "client_secret": {a.conf.ClientSecret}})
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
	e := newEnv(t)
	var logs lockedBuffer
	previous := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(previous) })

	for _, id := range []string{"arq_01M8F6J4FAQ9H8JPSCMAT749CQ", "arq_\x00", "nonsense", ""} {
		p := e.newBrowser().get(e.srv.URL + "/oauth/authorize/callback?" + url.Values{"id": {id}}.Encode())
		if p.status != http.StatusBadRequest {
			t.Errorf("callback for %q: %d %s", id, p.status, p.body)
		}
	}
	if strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Fatalf("logged as errors:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "unknown or expired authorization request") {
		t.Fatalf("the refusals were not logged:\n%s", logs.String())
	}
}
