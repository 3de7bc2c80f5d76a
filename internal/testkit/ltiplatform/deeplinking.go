package ltiplatform

import (
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// DeepLinkData is the opaque data the platform's deep-linking requests
// carry, which a response must return unchanged.
const DeepLinkData = "platform-data-1"

// DeepLink is a deep-linking response the platform took: its verified
// claims and content items.
type DeepLink struct {
	Claims map[string]any
	Items  []map[string]any
}

// DeepLinkReturnURL is the platform's deep_link_return_url.
func (p *Platform) DeepLinkReturnURL() string { return p.URL + "/deep-link-return" }

// DeepLinks returns the deep-linking responses the platform took.
func (p *Platform) DeepLinks() []DeepLink {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.deepLinks)
}

// deepLinkReturn takes an LtiDeepLinkingResponse as Deep Linking 2.0 says
// a platform does: the form parameter JWT, signed by a key the tool
// publishes at its JWKS URL, issued by the client id for the platform,
// for the tool's deployment, returning the request's data.
func (p *Platform) deepLinkReturn(w http.ResponseWriter, r *http.Request) {
	claims, err := p.verifyToolMessage(r.PostFormValue("JWT"))
	if err != nil {
		http.Error(w, "deep-linking response refused: "+err.Error(), http.StatusBadRequest)
		return
	}
	raw, _ := claims["https://purl.imsglobal.org/spec/lti-dl/claim/content_items"].([]any)
	link := DeepLink{Claims: claims}
	for _, it := range raw {
		item, ok := it.(map[string]any)
		if !ok || item["type"] != "ltiResourceLink" {
			http.Error(w, "deep-linking response refused: a content item is not an ltiResourceLink", http.StatusBadRequest)
			return
		}
		link.Items = append(link.Items, item)
	}
	p.mu.Lock()
	p.deepLinks = append(p.deepLinks, link)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = fmt.Fprintf(w, `<!doctype html><html lang="en"><head><title>Added · Test LMS</title></head><body><main><p id="added">Added %d item(s)</p></main></body></html>`, len(link.Items))
}

// verifyToolMessage checks a message the tool signed (IMS Security
// Framework 5.2) and returns its claims.
func (p *Platform) verifyToolMessage(token string) (map[string]any, error) {
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil || len(tok.Headers) != 1 {
		return nil, errors.New("not an RS256 JWT")
	}
	key, err := p.toolKey(tok.Headers[0].KeyID)
	if err != nil {
		return nil, err
	}
	var std jwt.Claims
	claims := map[string]any{}
	if err := tok.Claims(key, &std, &claims); err != nil {
		return nil, fmt.Errorf("signature: %w", err)
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: p.ClientID, AnyAudience: jwt.Audience{p.Issuer}, Time: p.Now()}, time.Minute); err != nil {
		return nil, err
	}
	switch {
	case std.Expiry == nil || std.IssuedAt == nil:
		return nil, errors.New("exp and iat are required")
	case claims["nonce"] == nil || claims["nonce"] == "":
		return nil, errors.New("no nonce")
	case claims[claim+"message_type"] != "LtiDeepLinkingResponse":
		return nil, fmt.Errorf("message_type %v", claims[claim+"message_type"])
	case claims[claim+"version"] != "1.3.0":
		return nil, fmt.Errorf("version %v", claims[claim+"version"])
	case claims[claim+"deployment_id"] != p.DeploymentID:
		return nil, fmt.Errorf("deployment_id %v", claims[claim+"deployment_id"])
	case claims["https://purl.imsglobal.org/spec/lti-dl/claim/data"] != DeepLinkData:
		return nil, errors.New("the request's data was not returned")
	}
	return claims, nil
}

// toolKey fetches the tool's JWKS and returns the key kid.
func (p *Platform) toolKey(kid string) (*rsa.PublicKey, error) {
	resp, err := http.Get(p.ToolURL + "/lti/jwks") //nolint:gosec,noctx // the tool under test
	if err != nil {
		return nil, fmt.Errorf("the tool's JWKS: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		return nil, fmt.Errorf("the tool's JWKS: %w", err)
	}
	for _, k := range set.Key(kid) {
		if pub, ok := k.Key.(*rsa.PublicKey); ok {
			return pub, nil
		}
	}
	return nil, fmt.Errorf("the tool publishes no key %q", kid)
}
