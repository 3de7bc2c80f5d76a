package lti

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// The scopes of the LTI Advantage services the tool asks tokens for.
const (
	ScopeScore       = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
	ScopeMemberships = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
)

// The bounds of a platform's token: the assertion proving the tool's
// identity lives a few minutes (it is used at once), a token is used
// until tokenMargin before its expiry, and one without an expires_in is
// taken to live defaultTokenLife.
const (
	assertionLifetime = 5 * time.Minute
	tokenMargin       = 30 * time.Second
	defaultTokenLife  = 5 * time.Minute
	maxTokenBytes     = 64 << 10
)

// errPlatformRefused is a platform's 4xx to a service request other than
// a rate limit: retrying the same request cannot succeed.
var errPlatformRefused = errors.New("lti: the platform refused the request")

// accessTokens obtains and caches the platforms' access tokens (LTI
// Security Framework 4.1): the client-credentials grant, the tool
// authenticated by a JWT it signs with its own key (RFC 7523), cached by
// registration and scope until shortly before the token expires.
type accessTokens struct {
	client httpClient
	now    func() time.Time
	mu     sync.Mutex
	cached map[string]*cachedToken
}

// cachedToken is one registration's token for one scope; its mutex makes
// concurrent requests that miss wait for one grant.
type cachedToken struct {
	mu      sync.Mutex
	token   string
	expires time.Time
}

func newAccessTokens(client httpClient, now func() time.Time) *accessTokens {
	return &accessTokens{client: client, now: now, cached: map[string]*cachedToken{}}
}

// forget drops p's cached token for scope: the platform no longer takes
// it (revoked, or its keys rotated).
func (a *accessTokens) forget(p Platform, scope string) {
	a.mu.Lock()
	delete(a.cached, p.ID+" "+scope)
	a.mu.Unlock()
}

// token returns a token of platform p for scope, granted now or cached;
// sign makes the client assertion.
func (a *accessTokens) token(ctx context.Context, p Platform, scope string, sign func(claims map[string]any) (string, error)) (string, error) {
	a.mu.Lock()
	c := a.cached[p.ID+" "+scope]
	if c == nil {
		c = &cachedToken{}
		a.cached[p.ID+" "+scope] = c
	}
	a.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token != "" && a.now().Before(c.expires) {
		return c.token, nil
	}
	token, life, err := a.grant(ctx, p, scope, sign)
	if err != nil {
		return "", err
	}
	c.token, c.expires = token, a.now().Add(life-tokenMargin)
	return token, nil
}

// grant asks p's token endpoint for a token of scope.
func (a *accessTokens) grant(ctx context.Context, p Platform, scope string, sign func(map[string]any) (string, error)) (string, time.Duration, error) {
	now := a.now()
	assertion, err := sign(map[string]any{"iss": p.ClientID, "sub": p.ClientID, "aud": p.AccessTokenURL,
		"iat": now.Unix(), "exp": now.Add(assertionLifetime).Unix(), "jti": rand.Text()})
	if err != nil {
		return "", 0, err
	}
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {scope},
		"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}, "client_assertion": {assertion}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.AccessTokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, fmt.Errorf("lti: token request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("lti: token request to %s: %w", p.AccessTokenURL, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenBytes))
	if err != nil {
		return "", 0, fmt.Errorf("lti: read the token: %w", err)
	}
	if err := statusError("token request", resp, body); err != nil {
		return "", 0, err
	}
	var t struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if err := json.Unmarshal(body, &t); err != nil || t.AccessToken == "" || !strings.EqualFold(t.TokenType, "bearer") {
		return "", 0, fmt.Errorf("%w: the token endpoint answered no bearer token", errPlatformRefused)
	}
	life := defaultTokenLife
	if t.ExpiresIn > 0 {
		life = time.Duration(t.ExpiresIn) * time.Second
	}
	return t.AccessToken, max(life, 2*tokenMargin), nil
}

// statusError is nil for a 2xx answer; a 4xx other than 429 is
// errPlatformRefused with what the platform said, anything else an error
// worth retrying.
func statusError(what string, resp *http.Response, body []byte) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	said := strings.TrimSpace(string(body))
	if len(said) > 200 {
		said = said[:200]
	}
	if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests {
		return fmt.Errorf("%w: %s answered %d: %s", errPlatformRefused, what, resp.StatusCode, said)
	}
	return fmt.Errorf("lti: %s answered %d: %s", what, resp.StatusCode, said)
}

// signAssertion signs claims with the tool's current key (RS256, typ JWT):
// the deep-linking responses and the client assertions.
func (s *Service) signAssertion(ctx context.Context, claims map[string]any) (string, error) {
	key, err := s.ToolKeys.Signing(ctx)
	if err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key.Private, KeyID: key.ID}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", fmt.Errorf("lti: signer: %w", err)
	}
	token, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		return "", fmt.Errorf("lti: sign: %w", err)
	}
	return token, nil
}

// serviceRequest sends a request of an Advantage service to p with a token
// of scope, granted once more if the platform no longer takes the cached
// one (401). body, when not nil, is sent as contentType.
func (s *Service) serviceRequest(ctx context.Context, p Platform, scope, method, target, accept, contentType string, body []byte) (*http.Response, error) {
	sign := func(claims map[string]any) (string, error) { return s.signAssertion(ctx, claims) }
	for try := 0; ; try++ {
		token, err := s.tokens.token(ctx, p, scope, sign)
		if err != nil {
			return nil, err
		}
		var reader io.Reader
		if body != nil {
			reader = strings.NewReader(string(body))
		}
		req, err := http.NewRequestWithContext(ctx, method, target, reader)
		if err != nil {
			return nil, fmt.Errorf("lti: service request: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", accept)
		if body != nil {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := s.client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("lti: %s %s: %w", method, target, err)
		}
		if resp.StatusCode != http.StatusUnauthorized || try > 0 {
			return resp, nil
		}
		_ = resp.Body.Close()
		s.tokens.forget(p, scope)
	}
}
