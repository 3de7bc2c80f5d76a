package sweeps_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"golang.org/x/oauth2"

	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

// TestHostileInputOverOAuth sends seeded, mutated requests to the OAuth and
// OpenID endpoints, which the OpenAPI sweep leaves out: the token,
// introspection, revocation, userinfo, authorization and logout endpoints,
// with forms and queries built from valid ones whose values are replaced
// by hostile ones (empty, NUL, invalid UTF-8, 64 KiB, JWT-shaped garbage,
// another client's ids) and with broken client authentication. No answer
// may be a 5xx.
func TestHostileInputOverOAuth(t *testing.T) {
	t.Parallel()
	rounds, seed := hostileRounds(t)
	var limits *redis.Client
	e := apptest.NewWithConfig(t, func(c *app.Config) { limits = c.Redis })
	tn, other := e.NewTenant("US", "pro"), e.NewTenant("DE", "pro")
	a := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{})
	a.Conf.Scopes = []string{"openid", "profile", "offline_access"}
	// The refresh and revocation sweeps revoke their grant (a refresh
	// token presented twice revokes it, decision 0146); the other sweeps use
	// a grant of their own, which stays live.
	tok, rotating := e.Token(a), e.Token(a)
	foreign := e.NewOAuthApp(other, tenancy.RoleTeacher, clients.ClientInput{})
	sa := e.NewServiceAccount(tn, tenancy.RoleTeacher)
	key := e.AddKey(sa)
	verifier := oauth2.GenerateVerifier()
	code := e.CodeFor(a, oauth2.S256ChallengeOption(verifier))
	idToken, _ := tok.Extra("id_token").(string)

	valid := []struct {
		method, path string
		form         url.Values
	}{
		{"POST", "/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {apptest.TestRedirect},
			"code_verifier": {verifier}, "client_id": {a.Conf.ClientID}, "client_secret": {a.Conf.ClientSecret}}},
		{"POST", "/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rotating.RefreshToken}, "scope": {"openid profile"},
			"client_id": {a.Conf.ClientID}, "client_secret": {a.Conf.ClientSecret}}},
		{"POST", "/oauth/token", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {e.Assertion(sa, key)}, "scope": {"users:read"}}},
		{"POST", "/oauth/introspect", url.Values{"token": {tok.AccessToken}, "token_type_hint": {"access_token"},
			"client_id": {a.Conf.ClientID}, "client_secret": {a.Conf.ClientSecret}}},
		{"POST", "/oauth/revoke", url.Values{"token": {rotating.RefreshToken}, "token_type_hint": {"refresh_token"},
			"client_id": {a.Conf.ClientID}, "client_secret": {a.Conf.ClientSecret}}},
		{"GET", "/oauth/userinfo", url.Values{"access_token": {tok.AccessToken}}},
		{"GET", "/oauth/authorize", url.Values{"client_id": {a.Conf.ClientID}, "redirect_uri": {apptest.TestRedirect}, "response_type": {"code"},
			"scope": {"openid profile"}, "state": {"s"}, "nonce": {"n"}, "code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)},
			"code_challenge_method": {"S256"}, "prompt": {"login"}, "max_age": {"60"}, "ui_locales": {"en"}}},
		{"GET", "/oauth/logout", url.Values{"id_token_hint": {idToken}, "post_logout_redirect_uri": {apptest.TestRedirect}, "state": {"s"},
			"client_id": {a.Conf.ClientID}}},
		{"GET", "/login", url.Values{"authRequestID": {"oar_00000000000000000000000000"}}},
	}
	hostile := []string{
		"", "\x00", "\xff\xfe", strings.Repeat("a", 64<<10), "a.b.c", "eyJhbGciOiJub25lIn0.e30.", "eyJhbGciOiJSUzI1NiIsImtpZCI6Ii4uLyJ9.e30.AA",
		"%zz", "null", "-1", "99999999999999999999", "oar_" + strings.Repeat("0", 26), foreign.Conf.ClientID, foreign.Conf.ClientSecret,
		"openid openid " + strings.Repeat("x ", 2000), "S256", "plain", "none", "code token id_token", "http://evil.example/",
	}
	authHeaders := []string{
		"", "Basic", "Basic !!!", "Basic " + base64.StdEncoding.EncodeToString([]byte("no colon")),
		"Basic " + base64.StdEncoding.EncodeToString([]byte(":")), "Basic " + base64.StdEncoding.EncodeToString([]byte("%zz:%zz")),
		"Basic " + base64.StdEncoding.EncodeToString([]byte(foreign.Conf.ClientID+":"+foreign.Conf.ClientSecret)),
		"Bearer ", "Bearer a.b.c", "Bearer " + strings.Repeat("A", 16<<10), "Bearer " + tok.RefreshToken, "Bearer " + foreign.Conf.ClientSecret,
		"Bearer " + tok.AccessToken,
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x51a7e))
	pick := func(s []string) string { return s[rng.IntN(len(s))] }

	var sent int
	var failures []string
	for _, v := range valid {
		for range rounds {
			form := mutatedForm(rng, v.form, hostile)
			var req *http.Request
			if v.method == "GET" {
				req, _ = http.NewRequest("GET", e.Srv.URL+v.path+"?"+form.Encode(), nil)
			} else {
				req, _ = http.NewRequest("POST", e.Srv.URL+v.path, strings.NewReader(form.Encode()))
				req.Header.Set("Content-Type", pick([]string{"application/x-www-form-urlencoded", "application/x-www-form-urlencoded",
					"application/json", "multipart/form-data; boundary=x", "text/plain; charset=\xff"}))
			}
			if h := pick(authHeaders); h != "" && rng.IntN(3) == 0 {
				req.Header.Set("Authorization", h)
			}
			// The failure limiter would answer 429 to most of a sweep from one
			// address; what is under test is what lies behind it.
			if err := limits.FlushDB(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			res, err := noRedirects.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(io.LimitReader(res.Body, 512))
			res.Body.Close()
			sent++
			if res.StatusCode >= 500 && len(failures) < 40 {
				failures = append(failures, fmt.Sprintf("%s %s %.300q (Authorization %.60q): %d %s", v.method, v.path, form.Encode(),
					req.Header.Get("Authorization"), res.StatusCode, raw))
			}
		}
	}
	t.Logf("hostile OAuth input: %d requests (seed %d)", sent, seed)
	for _, f := range failures {
		t.Error(f)
	}
}

// noRedirects is a client that returns redirects instead of following them:
// the authorization endpoint redirects to the app with its answer.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// TestHostileInputOverPages sends seeded, mutated forms to every form of
// the signed-in account and developer pages, as an admin: values replaced
// by hostile ones, dropped or repeated, path ids malformed or another
// organization's, and the CSRF token now and then missing or wrong. No
// answer may be a 5xx.
func TestHostileInputOverPages(t *testing.T) {
	t.Parallel()
	rounds, seed := hostileRounds(t)
	e := apptest.NewWithConfig(t, func(c *app.Config) { c.Webhooks.AllowPrivate = true })
	tn, other := e.NewTenant("US", "pro"), e.NewTenant("DE", "pro")
	a := e.NewOAuthApp(tn, tenancy.RoleAdmin, clients.ClientInput{})
	foreign := e.NewOAuthApp(other, tenancy.RoleAdmin, clients.ClientInput{})
	b := e.NewBrowser()
	csrf := e.SignIn(b, a).Field("csrf")
	// Real ids of each kind, so unmutated paths reach the forms' handlers.
	keyID := regexp.MustCompile(`/account/api-keys/(key_[0-9A-Z]+)/revoke`).FindStringSubmatch(
		b.Post(e.Srv.URL+"/account/api-keys", url.Values{"csrf": {csrf}, "name": {"sweep"}}).Body)
	hook := b.Post(e.Srv.URL+"/developer/webhooks", url.Values{"csrf": {csrf}, "url": {"http://127.0.0.1:9/hook"}, "events": {"user.created"}})
	hookID := regexp.MustCompile(`/developer/webhooks/(whe_[0-9A-Z]+)`).FindStringSubmatch(hook.Body + hook.URL.Path)
	if keyID == nil || hookID == nil {
		t.Fatalf("fixtures: key %v, webhook %v (%d)", keyID, hookID, hook.Status)
	}
	platform := apptest.Str(e.Do("POST", "/lti/platforms", tn.Keys[tenancy.RoleAdmin], map[string]any{"name": "LMS", "issuer": "https://lms.example",
		"clientId": "sweep", "authLoginUrl": "https://lms.example/auth", "accessTokenUrl": "http://127.0.0.1:9/token",
		"jwksUrl": "http://127.0.0.1:9/jwks"}).Must(t, 200).Body, "id")
	ids := map[string]string{"{key}": keyID[1], "{client}": a.Client.ID, "{webhook}": hookID[1], "{delivery}": "whd_" + strings.Repeat("0", 26),
		"{lti}": platform}

	forms := []struct {
		path string
		form url.Values
	}{
		{"/account/profile", url.Values{"name": {"Renamed"}}},
		{"/account/api-keys", url.Values{"name": {"export"}}},
		{"/account/api-keys/{key}/revoke", url.Values{}},
		{"/account/apps/{client}/revoke", url.Values{}},
		{"/account/allowed-apps", url.Values{"clientId": {a.Client.ID}}},
		{"/account/allowed-apps/{client}/remove", url.Values{}},
		{"/developer/clients", url.Values{"name": {"App"}, "description": {"d"}, "redirectUris": {"https://app.example/cb\nhttp://127.0.0.1:9/cb"}, "public": {"1"}, "auditLogsWrite": {"1"}}},
		{"/developer/clients/{client}", url.Values{"name": {"App"}, "description": {"d"}, "redirectUris": {"https://app.example/cb"}, "auditLogsWrite": {"1"}}},
		{"/developer/clients/{client}/rotate", url.Values{}},
		{"/developer/webhooks", url.Values{"url": {"http://127.0.0.1:9/hook"}, "description": {"d"}, "events": {"user.created", "result.graded"}}},
		{"/developer/webhooks/{webhook}", url.Values{"url": {"http://127.0.0.1:9/hook"}, "events": {"user.created"}, "enabled": {"1"}}},
		{"/developer/webhooks/{webhook}/rotate", url.Values{}},
		{"/developer/webhooks/{webhook}/deliveries/{delivery}/redeliver", url.Values{}},
		{"/developer/lti", url.Values{"name": {"LMS 2"}, "issuer": {"https://lms2.example"}, "clientId": {"c"}, "deploymentIds": {"1\n2"},
			"authLoginUrl": {"https://lms2.example/auth"}, "accessTokenUrl": {"http://127.0.0.1:9/t"}, "jwksUrl": {"http://127.0.0.1:9/k"}}},
		{"/developer/lti/{lti}", url.Values{"name": {"LMS"}, "issuer": {"https://lms.example"}, "clientId": {"sweep"}, "deploymentIds": {"1"},
			"authLoginUrl": {"https://lms.example/auth"}, "accessTokenUrl": {"http://127.0.0.1:9/t"}, "jwksUrl": {"http://127.0.0.1:9/k"}}},
		// The deletions go last: they remove the fixtures the others use.
		{"/developer/clients/{client}/delete", url.Values{}},
		{"/developer/webhooks/{webhook}/delete", url.Values{}},
		{"/developer/lti/{lti}/delete", url.Values{}},
	}
	hostile := []string{
		"", "\x00", "\xff\xfe", strings.Repeat("é", 40<<10), "<script>alert(1)</script>", "../../etc/passwd", "javascript:alert(1)",
		"http://[::1", "1", "-1", "cli_" + strings.Repeat("0", 26), foreign.Client.ID, "user.created\x00", "\r\nSet-Cookie: x=y",
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9a6e5))
	pick := func(s []string) string { return s[rng.IntN(len(s))] }

	var sent int
	var failures []string
	// Half the rounds: there are twice as many forms as OAuth endpoints.
	for _, f := range forms {
		for range max(rounds/2, 1) {
			path := f.path
			for _, placeholder := range slices.Sorted(maps.Keys(ids)) {
				id := ids[placeholder]
				if rng.IntN(4) == 0 {
					id = pick(hostile)
				}
				path = strings.ReplaceAll(path, placeholder, url.PathEscape(id))
			}
			form := mutatedForm(rng, f.form, hostile)
			switch rng.IntN(10) {
			case 0: // no CSRF token
			case 1:
				form.Set("csrf", pick(hostile))
			default:
				form.Set("csrf", csrf)
			}
			p := b.Post(e.Srv.URL+path, form)
			sent++
			if p.Status >= 500 && len(failures) < 40 {
				failures = append(failures, fmt.Sprintf("POST %s %.300q: %d %.300s", path, form.Encode(), p.Status, p.Body))
			}
		}
	}
	t.Logf("hostile page input: %d requests (seed %d)", sent, seed)
	for _, f := range failures {
		t.Error(f)
	}
}

// mutatedForm is a copy of base with one to three of its values replaced
// by hostile ones, dropped or repeated, and now and then (always, for an
// empty base) an unknown field added. Fields are picked in sorted order, so
// the seed alone decides the result.
func mutatedForm(rng *rand.Rand, base url.Values, hostile []string) url.Values {
	pick := func() string { return hostile[rng.IntN(len(hostile))] }
	form := url.Values{}
	for k, v := range base {
		form[k] = slices.Clone(v)
	}
	if len(form) == 0 || rng.IntN(5) == 0 {
		form.Set(pick(), pick())
	}
	for range 1 + rng.IntN(3) {
		keys := slices.Sorted(maps.Keys(form))
		if len(keys) == 0 {
			break
		}
		switch k := keys[rng.IntN(len(keys))]; rng.IntN(4) {
		case 0:
			delete(form, k)
		case 1:
			form.Add(k, pick())
		default:
			form.Set(k, pick())
		}
	}
	return form
}
