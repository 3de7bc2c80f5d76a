// Package ltiplatform is an LTI 1.3 platform (an LMS) for tests, written
// from the IMS specifications (LTI 1.3 Core, IMS Security Framework 1.0):
// its own RSA keys published as a JWKS, third-party initiated login, the
// OIDC authentication endpoint that answers with a signed id_token posted
// to the tool, and claims a test sets, or breaks, launch by launch. It
// drives a tool over real HTTP: from Go (Run) or from a browser (CoursePage).
package ltiplatform

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// The vocabularies a test names launches with.
const (
	RoleLearner    = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
	RoleInstructor = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
	RoleMentor     = "http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor"

	MessageResourceLink = "LtiResourceLinkRequest"
	MessageDeepLinking  = "LtiDeepLinkingRequest"

	claim = "https://purl.imsglobal.org/spec/lti/claim/"
)

// Signing is how a launch's id_token is signed.
type Signing int

// The signings a test chooses from.
const (
	// SignPublished signs with the key the JWKS publishes, named by its
	// kid: a valid token.
	SignPublished Signing = iota
	// SignWrongKey signs with a key the JWKS does not publish, under the
	// published key's kid: a forged signature.
	SignWrongKey
	// SignUnknownKid signs with an unpublished key under its own kid.
	SignUnknownKid
)

// Platform is a running test platform.
type Platform struct {
	// URL is the platform's server: its authentication endpoint is
	// URL+"/auth", its JWKS URL+"/jwks".
	URL string
	// Issuer is the iss of its tokens; ClientID the client id it gave the
	// tool; DeploymentID the tool's deployment.
	Issuer, ClientID, DeploymentID string
	// ToolURL is the tool's base URL: its login initiation is
	// ToolURL+"/lti/login", its launch (redirect URI) ToolURL+"/lti/launch".
	ToolURL string
	// Now is the platform's clock.
	Now func() time.Time

	key, other    *rsa.PrivateKey
	kid, otherKid string
	jwksFetches   atomic.Int64
	mu            sync.Mutex
	launches      map[string]*Launch // by login_hint
	deepLinks     []DeepLink
	svc           services
	srv           *httptest.Server
}

// New starts a platform for t whose tool is at toolURL; the server stops
// when t ends.
func New(t testing.TB, toolURL string) *Platform {
	t.Helper()
	p := &Platform{ClientID: "client-" + rand.Text()[:8], DeploymentID: "deployment-1", ToolURL: toolURL, Now: time.Now,
		kid: "platform-key-1", otherKid: "platform-key-unpublished", launches: map[string]*Launch{}}
	var err error
	if p.key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if p.other, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /auth", p.auth)
	mux.HandleFunc("POST /auth", p.auth)
	mux.HandleFunc("GET /course/{hint}", p.course)
	mux.HandleFunc("POST /deep-link-return", p.deepLinkReturn)
	p.serviceRoutes(mux)
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	p.URL = p.srv.URL
	p.Issuer = p.URL
	return p
}

// AuthLoginURL is the platform's OIDC authentication endpoint, as a tool
// registers it.
func (p *Platform) AuthLoginURL() string { return p.URL + "/auth" }

// JWKSURL is where the platform publishes its key.
func (p *Platform) JWKSURL() string { return p.URL + "/jwks" }

// TokenURL is the platform's token endpoint.
func (p *Platform) TokenURL() string { return p.URL + "/token" }

// JWKSFetches counts the requests for the platform's JWKS.
func (p *Platform) JWKSFetches() int64 { return p.jwksFetches.Load() }

// Context is the course a launch comes from.
type Context struct{ ID, Label, Title string }

// Launch is one launch a test drives: who launches, from where, and how
// the id_token is made or broken.
type Launch struct {
	// MessageType is MessageResourceLink when empty.
	MessageType string
	// Subject is the user's id on the platform (sub); Name and Email are
	// shared when set.
	Subject, Name, Email string
	Roles                []string
	Context              *Context
	// ResourceLinkID is the launched link ("link-1" when empty).
	ResourceLinkID string
	Custom         map[string]string
	// TargetLinkURI is the tool's launch URL when empty.
	TargetLinkURI string
	// ReturnURL is the launch presentation's return_url.
	ReturnURL string
	// DeepLinkReturnURL is a deep-linking request's return URL (the
	// platform's own when empty).
	DeepLinkReturnURL string
	// Signing is how the id_token is signed.
	Signing Signing
	// ExpiresIn is the id_token's lifetime (five minutes when zero; a
	// negative one makes an expired token).
	ExpiresIn time.Duration
	// Nonce, when set, is put in the id_token instead of the nonce the
	// tool's authentication request asked for (a replay).
	Nonce string
	// Tamper changes the id_token's claims before signing.
	Tamper func(claims map[string]any)
	// OmitState leaves the state out of the form posted to the tool.
	OmitState bool
	// LineItem, when set, is the id of the link's line item: the launch's
	// AGS claim names it, with the score scope.
	LineItem string
	// Roster offers the course's memberships (the NRPS claim).
	Roster bool

	// AskedNonce and AskedState are what the tool's authentication
	// request carried, once it came.
	AskedNonce, AskedState string
}

// Prepare registers l under a new login hint and returns the URL of the
// tool's login initiation for it (GET, as platforms send it).
func (p *Platform) Prepare(l *Launch) string {
	return p.loginURL(p.register(l))
}

// register keeps l under a new login hint.
func (p *Platform) register(l *Launch) string {
	hint := "hint-" + rand.Text()
	p.mu.Lock()
	p.launches[hint] = l
	p.mu.Unlock()
	return hint
}

// loginURL is the tool's login initiation for the launch of hint.
func (p *Platform) loginURL(hint string) string {
	q := url.Values{"iss": {p.Issuer}, "login_hint": {hint}, "target_link_uri": {p.ToolURL + "/lti/launch"},
		"lti_message_hint": {"message-" + hint}, "client_id": {p.ClientID}, "lti_deployment_id": {p.DeploymentID}}
	return p.ToolURL + "/lti/login?" + q.Encode()
}

// CoursePage is the URL of a course page of the platform that frames the
// tool for l, as an LMS shows a tool placement.
func (p *Platform) CoursePage(l *Launch) string {
	return p.URL + "/course/" + p.register(l)
}

func (p *Platform) course(w http.ResponseWriter, r *http.Request) {
	hint := r.PathValue("hint")
	p.mu.Lock()
	l := p.launches[hint]
	p.mu.Unlock()
	if l == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = coursePage.Execute(w, map[string]string{"Login": p.loginURL(hint)})
}

var coursePage = template.Must(template.New("").Parse(`<!doctype html><html lang="en"><head><title>Course · Test LMS</title></head>
<body><main><h1>Course</h1><iframe id="tool" title="assessd" src="{{.Login}}" width="1000" height="800"></iframe></main></body></html>`))

func (p *Platform) jwks(w http.ResponseWriter, _ *http.Request) {
	p.jwksFetches.Add(1)
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &p.key.PublicKey, KeyID: p.kid, Algorithm: string(jose.RS256), Use: "sig"}}}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(set)
}

// auth is the platform's OIDC authentication endpoint: it checks the
// tool's authentication request as LTI 1.3 Core 5.1.1.2 and IMS Security
// Framework 5.1.1.2 say, and answers with the id_token form, posted to
// the redirect URI (response_mode form_post) by the browser.
func (p *Platform) auth(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		_ = r.ParseForm()
		q = r.Form
	}
	for name, want := range map[string]string{"scope": "openid", "response_type": "id_token", "response_mode": "form_post",
		"prompt": "none", "client_id": p.ClientID, "redirect_uri": p.ToolURL + "/lti/launch"} {
		if got := q.Get(name); got != want {
			http.Error(w, fmt.Sprintf("invalid_request: %s is %q, want %q", name, got, want), http.StatusBadRequest)
			return
		}
	}
	for _, name := range []string{"state", "nonce", "login_hint"} {
		if q.Get(name) == "" {
			http.Error(w, "invalid_request: no "+name, http.StatusBadRequest)
			return
		}
	}
	hint := q.Get("login_hint")
	p.mu.Lock()
	l := p.launches[hint]
	p.mu.Unlock()
	if l == nil {
		http.Error(w, "login_required: unknown login_hint", http.StatusBadRequest)
		return
	}
	if mh := q.Get("lti_message_hint"); mh != "" && mh != "message-"+hint {
		http.Error(w, "invalid_request: lti_message_hint changed", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	l.AskedNonce, l.AskedState = q.Get("nonce"), q.Get("state")
	p.mu.Unlock()
	token, err := p.IDToken(l, q.Get("nonce"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	fields := map[string]string{"id_token": token}
	if !l.OmitState {
		fields["state"] = q.Get("state")
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = autoPost.Execute(w, map[string]any{"Action": q.Get("redirect_uri"), "Fields": fields})
}

// autoPost is the form_post response: a form the page submits at once.
var autoPost = template.Must(template.New("").Parse(`<!doctype html><html lang="en"><head><title>Signing in</title></head>
<body><form id="post" method="post" action="{{.Action}}">{{range $k, $v := .Fields}}<input type="hidden" name="{{$k}}" value="{{$v}}">{{end}}<noscript><button>Continue</button></noscript></form>
<script>document.getElementById("post").submit()</script></body></html>`))

// Claims returns the id_token claims of l for a request that asked nonce.
func (p *Platform) Claims(l *Launch, nonce string) map[string]any {
	now := p.Now()
	exp := l.ExpiresIn
	if exp == 0 {
		exp = 5 * time.Minute
	}
	if l.Nonce != "" {
		nonce = l.Nonce
	}
	msg := l.MessageType
	if msg == "" {
		msg = MessageResourceLink
	}
	target := l.TargetLinkURI
	if target == "" {
		target = p.ToolURL + "/lti/launch"
	}
	c := map[string]any{
		"iss": p.Issuer, "aud": []string{p.ClientID}, "azp": p.ClientID, "sub": l.Subject,
		"iat": now.Unix(), "exp": now.Add(exp).Unix(), "nonce": nonce,
		claim + "message_type": msg, claim + "version": "1.3.0", claim + "deployment_id": p.DeploymentID,
		claim + "target_link_uri": target, claim + "roles": l.Roles,
		claim + "tool_platform": map[string]any{"guid": "test-lms", "name": "Test LMS", "product_family_code": "assessd-tests"},
	}
	if l.Name != "" {
		c["name"] = l.Name
	}
	if l.Email != "" {
		c["email"] = l.Email
	}
	if l.Context != nil {
		c[claim+"context"] = map[string]any{"id": l.Context.ID, "label": l.Context.Label, "title": l.Context.Title,
			"type": []string{"http://purl.imsglobal.org/vocab/lis/v2/course#CourseOffering"}}
	}
	if msg == MessageResourceLink {
		link := l.ResourceLinkID
		if link == "" {
			link = "link-1"
		}
		c[claim+"resource_link"] = map[string]any{"id": link, "title": "Unit test"}
	}
	if len(l.Custom) > 0 {
		c[claim+"custom"] = maps.Clone(l.Custom)
	}
	if l.ReturnURL != "" {
		c[claim+"launch_presentation"] = map[string]any{"document_target": "iframe", "return_url": l.ReturnURL}
	}
	if msg == MessageDeepLinking {
		ret := l.DeepLinkReturnURL
		if ret == "" {
			ret = p.DeepLinkReturnURL()
		}
		c["https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"] = map[string]any{
			"deep_link_return_url": ret, "accept_types": []string{"ltiResourceLink"},
			"accept_presentation_document_targets": []string{"iframe", "window"}, "accept_multiple": false, "data": DeepLinkData}
	}
	if l.LineItem != "" {
		c["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"] = map[string]any{
			"scope": []string{ScopeLineItem, ScopeScore}, "lineitems": p.URL + "/lineitems", "lineitem": p.LineItemURL(l.LineItem)}
	}
	if l.Roster {
		c["https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"] = map[string]any{
			"context_memberships_url": p.MembershipsURL(), "service_versions": []string{"2.0"}}
	}
	if l.Tamper != nil {
		l.Tamper(c)
	}
	return c
}

// IDToken signs l's claims for a request that asked nonce, as l.Signing
// says.
func (p *Platform) IDToken(l *Launch, nonce string) (string, error) {
	key, kid := p.key, p.kid
	switch l.Signing {
	case SignWrongKey:
		key = p.other
	case SignUnknownKid:
		key, kid = p.other, p.otherKid
	}
	return p.Sign(key, kid, p.Claims(l, nonce))
}

// Sign signs claims with key under kid (RS256, typ JWT).
func (p *Platform) Sign(key *rsa.PrivateKey, kid string, claims map[string]any) (string, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", err
	}
	return jwt.Signed(signer).Claims(claims).Serialize()
}

// Result is how the tool answered a launch.
type Result struct {
	// Status, Header and Body are the answer to the launch's form post,
	// redirects not followed.
	Status int
	Header http.Header
	Body   string
	// Form is what was posted to the tool.
	Form url.Values
}

// Run drives l through the tool over HTTP, as a browser would, with
// client (which must not follow redirects): the tool's login initiation,
// its redirect to the platform's authentication endpoint, and the form
// post of the id_token to the tool. The login must succeed; the launch's
// answer is returned whatever it is.
func (p *Platform) Run(t testing.TB, client *http.Client, l *Launch) Result {
	t.Helper()
	resp := get(t, client, p.Prepare(l))
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("tool login answered %d, want 302: %s", resp.StatusCode, readAll(resp))
	}
	loc := resp.Header.Get("Location")
	_ = resp.Body.Close()
	if !strings.HasPrefix(loc, p.AuthLoginURL()+"?") {
		t.Fatalf("tool login redirected to %s, not the platform's authentication endpoint", loc)
	}
	resp = get(t, client, loc)
	page := readAll(resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("platform refused the tool's authentication request: %d %s", resp.StatusCode, page)
	}
	action, form := parseAutoPost(t, page)
	return Post(t, client, action, form)
}

// Post posts form to url with client and returns the answer.
func Post(t testing.TB, client *http.Client, target string, form url.Values) Result {
	t.Helper()
	resp, err := client.PostForm(target, form) //nolint:noctx // a test request
	if err != nil {
		t.Fatal(err)
	}
	return Result{Status: resp.StatusCode, Header: resp.Header, Body: readAll(resp), Form: form}
}

var (
	formAction = regexp.MustCompile(`<form id="post" method="post" action="([^"]+)">`)
	formField  = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

// parseAutoPost reads the form of an autoPost page.
func parseAutoPost(t testing.TB, page string) (string, url.Values) {
	t.Helper()
	m := formAction.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no form in the platform's answer: %s", page)
	}
	form := url.Values{}
	for _, f := range formField.FindAllStringSubmatch(page, -1) {
		form.Set(html.UnescapeString(f[1]), html.UnescapeString(f[2]))
	}
	return html.UnescapeString(m[1]), form
}

func get(t testing.TB, client *http.Client, u string) *http.Response {
	t.Helper()
	resp, err := client.Get(u) //nolint:noctx // a test request
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func readAll(resp *http.Response) string {
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
