package app_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/assessd/assessd/internal/identity"
	"github.com/assessd/assessd/internal/testkit/formfield"
	"github.com/assessd/assessd/tenancy"
)

const testRedirect = "http://127.0.0.1:9/callback"

// oauthApp is a registered client and a user who can sign in.
type oauthApp struct {
	client   identity.Client
	conf     *oauth2.Config
	email    string
	password string
	user     tenancy.User
}

// newOAuthApp registers a client in tn's organization and a user of role
// with a password.
func (e *env) newOAuthApp(tn tenant, role tenancy.Role, in identity.ClientInput) *oauthApp {
	e.t.Helper()
	ctx := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.org.ID))
	if in.Name == "" {
		in.Name = "Gradebook Sync"
	}
	if in.RedirectURIs == nil {
		in.RedirectURIs = []string{testRedirect}
	}
	c, secret, err := e.app.Identity.CreateClient(ctx, in)
	if err != nil {
		e.t.Fatal(err)
	}
	// Browsers validate type=email fields: no underscore in the domain.
	a := &oauthApp{client: c, email: "signin-" + string(role) + "@" + strings.ToLower(strings.ReplaceAll(tn.org.ID, "_", "-")) + ".test", password: "correct horse battery"}
	a.user, err = e.app.Tenancy.CreateUser(ctx, tenancy.NewUser{Email: a.email, Name: "Signing In", Role: role, Password: a.password})
	if err != nil {
		e.t.Fatal(err)
	}
	a.conf = &oauth2.Config{
		ClientID: c.ID, ClientSecret: secret, RedirectURL: testRedirect,
		Endpoint: oauth2.Endpoint{AuthURL: e.srv.URL + "/oauth/authorize", TokenURL: e.srv.URL + "/oauth/token"},
	}
	return a
}

// browser is a cookie-keeping client that stops at the app's redirect URI.
type browser struct {
	t      *testing.T
	client *http.Client
}

func (e *env) newBrowser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: e.t, client: &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), "http://127.0.0.1:9/") {
			return http.ErrUseLastResponse
		}
		return nil
	}}}
}

type page struct {
	status   int
	url      *url.URL
	location string
	body     string
}

func (b *browser) do(req *http.Request) page {
	b.t.Helper()
	res, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return page{status: res.StatusCode, url: res.Request.URL, location: res.Header.Get("Location"), body: string(body)}
}

func (b *browser) get(u string) page {
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	return b.do(req)
}

func (b *browser) post(u string, form url.Values) page {
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

// field is the value of a hidden form field of the page.
func (p page) field(name string) string { return formfield.Value(p.body, name) }

// authorize walks the browser through /oauth/authorize, the login form and
// the consent screen, answering decision, and returns the redirect back to
// the app.
func (e *env) authorize(b *browser, a *oauthApp, decision string, opts ...oauth2.AuthCodeOption) *url.URL {
	e.t.Helper()
	login := b.get(a.conf.AuthCodeURL("state-123", opts...))
	if login.status != http.StatusOK || login.field("authRequestID") == "" {
		e.t.Fatalf("authorize did not reach the login page: %d %s\n%s", login.status, login.url, login.body)
	}
	form := url.Values{"csrf": {login.field("csrf")}, "authRequestID": {login.field("authRequestID")}, "email": {a.email}, "password": {a.password}}
	consent := b.post(e.srv.URL+"/login", form)
	if consent.status != http.StatusOK || !strings.Contains(consent.body, ">Approve<") || !strings.Contains(consent.body, a.client.Name) {
		e.t.Fatalf("login did not reach the consent screen: %d\n%s", consent.status, consent.body)
	}
	back := b.post(e.srv.URL+"/consent", url.Values{"csrf": {consent.field("csrf")}, "authRequestID": {consent.field("authRequestID")}, "decision": {decision}})
	if back.status != http.StatusFound && back.status != http.StatusSeeOther {
		e.t.Fatalf("consent did not redirect to the app: %d %s\n%s", back.status, back.url, back.body)
	}
	u, err := url.Parse(back.location)
	if err != nil || !strings.HasPrefix(back.location, testRedirect) {
		e.t.Fatalf("redirected to %q, want the app's redirect URI", back.location)
	}
	return u
}

// oauthError returns the RFC 6749 error code of a failed exchange.
func oauthError(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return ""
}
