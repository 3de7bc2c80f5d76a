package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"

	"golang.org/x/oauth2"

	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/testkit/formfield"
	"github.com/assessd/assessd/tenancy"
)

// redirectURI is where both providers send the browser back; nothing
// listens there, the browser stops before it.
const redirectURI = "http://127.0.0.1:9/callback"

// provider is one OAuth provider under load: one authorization per chain,
// obtained through the authorization-code flow with PKCE, and how to use
// its tokens.
type provider struct {
	name  string
	oauth *oauth2.Config
	// access and refresh hold each chain's tokens; a refresh grant
	// replaces its chain's refresh token (rotation).
	access, refresh []string
	// authenticate sends one request authenticated by an access token and
	// reports whether it was accepted.
	authenticate func(c *http.Client, access string) bool
}

// sender sends one request of a measure with chain's tokens.
type sender func(p *provider, c *http.Client, chain int) bool

// sender spreads clients over p's chains: a chain is used by one client
// at a time when there are no more clients than chains.
func (p *provider) sender(send sender) func(*http.Client, int) bool {
	return func(c *http.Client, worker int) bool { return send(p, c, worker%len(p.refresh)) }
}

func (p *provider) authenticated(c *http.Client, chain int) bool {
	return p.authenticate(c, p.access[chain])
}

// refreshGrant trades chain's refresh token for a new pair and keeps the
// new refresh token.
func (p *provider) refreshGrant(c *http.Client, chain int) bool {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {p.refresh[chain]}, "client_id": {p.oauth.ClientID}}
	res, err := c.PostForm(p.oauth.Endpoint.TokenURL, form)
	if err != nil {
		return false
	}
	defer res.Body.Close()
	var tok struct {
		RefreshToken string `json:"refresh_token"`
	}
	if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&tok) != nil || tok.RefreshToken == "" {
		return false
	}
	p.refresh[chain] = tok.RefreshToken
	return true
}

// authorize runs chains authorization-code flows, approving each with
// approve (which walks the provider's sign-in and consent from the
// authorization URL to the redirect back), and keeps their tokens.
func (p *provider) authorize(ctx context.Context, chains int, approve func(b *browser, authURL string) (*url.URL, error)) error {
	for range chains {
		verifier := oauth2.GenerateVerifier()
		back, err := approve(newBrowser(), p.oauth.AuthCodeURL("state-123456", oauth2.S256ChallengeOption(verifier)))
		if err != nil {
			return err
		}
		code := back.Query().Get("code")
		if code == "" {
			return fmt.Errorf("redirected back without a code: %s", back)
		}
		tok, err := p.oauth.Exchange(ctx, code, oauth2.VerifierOption(verifier))
		if err != nil {
			return fmt.Errorf("exchange: %w", err)
		}
		if tok.RefreshToken == "" {
			return fmt.Errorf("%s issued no refresh token", p.name)
		}
		p.access, p.refresh = append(p.access, tok.AccessToken), append(p.refresh, tok.RefreshToken)
	}
	return nil
}

// newAssessd registers a public client and a teacher in a new organization
// and authorizes chains times through the sign-in and consent pages.
func newAssessd(ctx context.Context, a *app.App, base string, chains int) (*provider, error) {
	org, err := a.Tenancy.CreateOrg(ctx, tenancy.NewOrg{Name: "Bench", Country: "US", Plan: tenancy.PlanPro})
	if err != nil {
		return nil, err
	}
	ctx = tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	const email, password = "oauth-bench@example.com", "correct horse battery"
	if _, err := a.Tenancy.CreateUser(ctx, tenancy.NewUser{Email: email, Name: "Bench", Role: tenancy.RoleTeacher, Password: password}); err != nil {
		return nil, err
	}
	client, _, err := a.Clients.CreateClient(ctx, clients.ClientInput{Name: "Bench", RedirectURIs: []string{redirectURI}, Public: true})
	if err != nil {
		return nil, err
	}
	p := &provider{name: "assessd", oauth: &oauth2.Config{ClientID: client.ID, RedirectURL: redirectURI,
		Scopes:   []string{"openid", "profile", "offline_access"},
		Endpoint: oauth2.Endpoint{AuthURL: base + "/oauth/authorize", TokenURL: base + "/oauth/token", AuthStyle: oauth2.AuthStyleInParams}}}
	p.authenticate = func(c *http.Client, access string) bool {
		req, _ := http.NewRequest(http.MethodGet, base+"/me", nil)
		req.Header.Set("Authorization", "Bearer "+access)
		return accepted(c, req, nil)
	}
	return p, p.authorize(ctx, chains, func(b *browser, authURL string) (*url.URL, error) {
		login, err := b.get(authURL)
		if err != nil {
			return nil, err
		}
		consent, err := b.post(base+"/login", url.Values{"csrf": {login.field("csrf")}, "authRequestID": {login.field("authRequestID")},
			"email": {email}, "password": {password}})
		if err != nil {
			return nil, err
		}
		back, err := b.post(base+"/consent", url.Values{"csrf": {consent.field("csrf")}, "authRequestID": {consent.field("authRequestID")},
			"decision": {"approve"}})
		if err != nil {
			return nil, err
		}
		return back.redirect()
	})
}

// newHydra registers a public client with Hydra's admin API and authorizes
// chains times, accepting each login and consent request through the admin
// API as a login and consent app does.
func newHydra(ctx context.Context, public, admin string, chains int) (*provider, error) {
	var client struct {
		ClientID string `json:"client_id"`
	}
	err := adminCall(http.MethodPost, admin+"/admin/clients", map[string]any{
		"client_name": "assessd bench", "grant_types": []string{"authorization_code", "refresh_token"},
		"response_types": []string{"code"}, "redirect_uris": []string{redirectURI},
		"scope": "openid offline_access", "token_endpoint_auth_method": "none",
	}, &client)
	if err != nil {
		return nil, err
	}
	p := &provider{name: "Hydra", oauth: &oauth2.Config{ClientID: client.ClientID, RedirectURL: redirectURI,
		Scopes:   []string{"openid", "offline_access"},
		Endpoint: oauth2.Endpoint{AuthURL: public + "/oauth2/auth", TokenURL: public + "/oauth2/token", AuthStyle: oauth2.AuthStyleInParams}}}
	active := []byte(`"active":true`)
	p.authenticate = func(c *http.Client, access string) bool {
		req, _ := http.NewRequest(http.MethodPost, admin+"/admin/oauth2/introspect", strings.NewReader(url.Values{"token": {access}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return accepted(c, req, active)
	}
	accept := func(b *browser, from page, challenge, path string, body any) (page, error) {
		to, err := from.redirect()
		if err != nil {
			return page{}, err
		}
		var next struct {
			RedirectTo string `json:"redirect_to"`
		}
		err = adminCall(http.MethodPut, admin+path+"?"+challenge+"="+url.QueryEscape(to.Query().Get(challenge)), body, &next)
		if err != nil {
			return page{}, err
		}
		return b.get(next.RedirectTo)
	}
	return p, p.authorize(ctx, chains, func(b *browser, authURL string) (*url.URL, error) {
		login, err := b.get(authURL)
		if err != nil {
			return nil, err
		}
		consent, err := accept(b, login, "login_challenge", "/admin/oauth2/auth/requests/login/accept", map[string]any{"subject": "bench-user"})
		if err != nil {
			return nil, err
		}
		back, err := accept(b, consent, "consent_challenge", "/admin/oauth2/auth/requests/consent/accept",
			map[string]any{"grant_scope": []string{"openid", "offline_access"}})
		if err != nil {
			return nil, err
		}
		return back.redirect()
	})
}

// accepted sends req and reports whether it answered 200 and, when want is
// set, a body containing it.
func accepted(c *http.Client, req *http.Request, want []byte) bool {
	res, err := c.Do(req)
	if err != nil {
		return false
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return err == nil && res.StatusCode == http.StatusOK && (want == nil || bytes.Contains(body, want))
}

// adminCall sends body as JSON and decodes a 2xx answer into out.
func adminCall(method, u string, body, out any) error {
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, u, bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		b, _ := io.ReadAll(res.Body)
		return fmt.Errorf("%s %s: %d %s", method, u, res.StatusCode, b)
	}
	return json.NewDecoder(res.Body).Decode(out)
}

// browser keeps cookies, follows redirects within the providers and stops
// at redirectURI's host, where the sign-in apps and the relying party
// would be.
type browser struct{ client *http.Client }

func newBrowser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{client: &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Host == "127.0.0.1:9" {
			return http.ErrUseLastResponse
		}
		return nil
	}}}
}

// page is what the browser was shown.
type page struct {
	status   int
	location string
	body     string
}

func (b *browser) get(u string) (page, error) {
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	return b.do(req)
}

func (b *browser) post(u string, form url.Values) (page, error) {
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

func (b *browser) do(req *http.Request) (page, error) {
	res, err := b.client.Do(req)
	if err != nil {
		return page{}, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return page{status: res.StatusCode, location: res.Header.Get("Location"), body: string(body)}, err
}

// redirect is where the page sends the browser off the provider.
func (p page) redirect() (*url.URL, error) {
	if p.status != http.StatusFound && p.status != http.StatusSeeOther {
		return nil, fmt.Errorf("expected a redirect, got %d: %.300s", p.status, p.body)
	}
	return url.Parse(p.location)
}

// field is the value of a hidden form field of the page.
func (p page) field(name string) string { return formfield.Value(p.body, name) }
