package apptest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/testkit/formfield"
	"github.com/assessd/assessd/tenancy"
)

// TestRedirect is the redirect URI of the apps NewOAuthApp registers; a
// Browser stops there, as the app would take over.
const TestRedirect = "http://127.0.0.1:9/callback"

// OAuthApp is a registered client and a user who can sign in.
type OAuthApp struct {
	Client   clients.Client
	Conf     *oauth2.Config
	Email    string
	Password string
	User     tenancy.User
}

// NewOAuthApp registers a client in tn's organization and a user of role
// with a password.
func (e *Env) NewOAuthApp(tn Tenant, role tenancy.Role, in clients.ClientInput) *OAuthApp {
	e.T.Helper()
	ctx := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.Org.ID))
	if in.Name == "" {
		in.Name = "Gradebook Sync"
	}
	if in.RedirectURIs == nil {
		in.RedirectURIs = []string{TestRedirect}
	}
	c, secret, err := e.App.Clients.CreateClient(ctx, in)
	if err != nil {
		e.T.Fatal(err)
	}
	// Browsers validate type=email fields: no underscore in the domain.
	a := &OAuthApp{Client: c, Email: "signin-" + string(role) + "@" + strings.ToLower(strings.ReplaceAll(tn.Org.ID, "_", "-")) + ".test", Password: "correct horse battery"}
	a.User, err = e.App.Tenancy.CreateUser(ctx, tenancy.NewUser{Email: a.Email, Name: "Signing In", Role: role, Password: a.Password})
	if err != nil {
		e.T.Fatal(err)
	}
	a.Conf = &oauth2.Config{
		ClientID: c.ID, ClientSecret: secret, RedirectURL: TestRedirect,
		Endpoint: oauth2.Endpoint{AuthURL: e.Srv.URL + "/oauth/authorize", TokenURL: e.Srv.URL + "/oauth/token"},
	}
	return a
}

// Browser is a cookie-keeping client that stops at the app's redirect URI.
type Browser struct {
	t      *testing.T
	client *http.Client
}

// NewBrowser returns a browser with no cookies.
func (e *Env) NewBrowser() *Browser {
	jar, _ := cookiejar.New(nil)
	return &Browser{t: e.T, client: &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), "http://127.0.0.1:9/") {
			return http.ErrUseLastResponse
		}
		return nil
	}}}
}

// Page is what a browser request ended on.
type Page struct {
	Status   int
	URL      *url.URL
	Location string
	Body     string
}

// Do sends req, following redirects short of the app's redirect URI.
func (b *Browser) Do(req *http.Request) Page {
	b.t.Helper()
	res, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return Page{Status: res.StatusCode, URL: res.Request.URL, Location: res.Header.Get("Location"), Body: string(body)}
}

// Get opens u.
func (b *Browser) Get(u string) Page {
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	return b.Do(req)
}

// Post submits form to u.
func (b *Browser) Post(u string, form url.Values) Page {
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.Do(req)
}

// Field is the value of a hidden form field of the page.
func (p Page) Field(name string) string { return formfield.Value(p.Body, name) }

// codeTag is a <code> element of a page, where pages show ids and
// secrets.
var codeTag = regexp.MustCompile(`<code>([^<]+)</code>`)

// Codes are the texts of the page's <code> elements, in order.
func (p Page) Codes() []string {
	var out []string
	for _, m := range codeTag.FindAllStringSubmatch(p.Body, -1) {
		out = append(out, m[1])
	}
	return out
}

// SignIn signs the browser in on the login page as a's user.
func (e *Env) SignIn(b *Browser, a *OAuthApp) Page {
	e.T.Helper()
	login := b.Get(e.Srv.URL + "/login")
	p := b.Post(e.Srv.URL+"/login", url.Values{"csrf": {login.Field("csrf")}, "email": {a.Email}, "password": {a.Password}})
	if p.Status != http.StatusOK || !strings.Contains(p.Body, "Account settings") {
		e.T.Fatalf("sign-in did not land on the account page: %d\n%s", p.Status, p.Body)
	}
	return p
}

// Authorize walks the browser through /oauth/authorize, the login form and
// the consent screen, answering decision, and returns the redirect back to
// the app.
func (e *Env) Authorize(b *Browser, a *OAuthApp, decision string, opts ...oauth2.AuthCodeOption) *url.URL {
	e.T.Helper()
	login := b.Get(a.Conf.AuthCodeURL("state-123", opts...))
	if login.Status != http.StatusOK || login.Field("authRequestID") == "" {
		e.T.Fatalf("authorize did not reach the login page: %d %s\n%s", login.Status, login.URL, login.Body)
	}
	form := url.Values{"csrf": {login.Field("csrf")}, "authRequestID": {login.Field("authRequestID")}, "email": {a.Email}, "password": {a.Password}}
	consent := b.Post(e.Srv.URL+"/login", form)
	if consent.Status != http.StatusOK || !strings.Contains(consent.Body, ">Approve<") || !strings.Contains(consent.Body, a.Client.Name) {
		e.T.Fatalf("login did not reach the consent screen: %d\n%s", consent.Status, consent.Body)
	}
	back := b.Post(e.Srv.URL+"/consent", url.Values{"csrf": {consent.Field("csrf")}, "authRequestID": {consent.Field("authRequestID")}, "decision": {decision}})
	if back.Status != http.StatusFound && back.Status != http.StatusSeeOther {
		e.T.Fatalf("consent did not redirect to the app: %d %s\n%s", back.Status, back.URL, back.Body)
	}
	u, err := url.Parse(back.Location)
	if err != nil || !strings.HasPrefix(back.Location, TestRedirect) {
		e.T.Fatalf("redirected to %q, want the app's redirect URI", back.Location)
	}
	return u
}

// CodeFor runs the browser flow and returns a fresh authorization code.
func (e *Env) CodeFor(a *OAuthApp, opts ...oauth2.AuthCodeOption) string {
	e.T.Helper()
	return e.Authorize(e.NewBrowser(), a, "approve", opts...).Query().Get("code")
}

// Token runs the browser flow with PKCE and exchanges the code.
func (e *Env) Token(a *OAuthApp) *oauth2.Token {
	e.T.Helper()
	verifier := oauth2.GenerateVerifier()
	tok, err := a.Conf.Exchange(context.Background(), e.CodeFor(a, oauth2.S256ChallengeOption(verifier)), oauth2.VerifierOption(verifier))
	if err != nil {
		e.T.Fatalf("exchange: %v", err)
	}
	return tok
}

// Userinfo calls the OIDC userinfo endpoint with an access token (""
// sends none): the status, the body and the WWW-Authenticate challenge.
func (e *Env) Userinfo(accessToken string) (int, map[string]any, string) {
	e.T.Helper()
	req, _ := http.NewRequest("GET", e.Srv.URL+"/oauth/userinfo", nil)
	if accessToken != "" {
		req.Header.Set("Authorization", "Bearer "+accessToken)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	defer res.Body.Close()
	var info map[string]any
	_ = json.NewDecoder(res.Body).Decode(&info)
	return res.StatusCode, info, res.Header.Get("WWW-Authenticate")
}

// OAuthError returns the RFC 6749 error code of a failed exchange.
func OAuthError(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return ""
}
