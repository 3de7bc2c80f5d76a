package apptest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/url"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/assessd/assessd/internal/identity/serviceaccounts"
	"github.com/assessd/assessd/tenancy"
)

// ServiceAccount is a service account and its organization's system caller.
type ServiceAccount struct {
	serviceaccounts.ServiceAccount
	Ctx context.Context
}

// SigningKey is a service account's registered key and its private half.
type SigningKey struct {
	ID      string
	Private *rsa.PrivateKey
}

// NewServiceAccount creates a service account of role in tn's organization.
func (e *Env) NewServiceAccount(tn Tenant, role tenancy.Role) ServiceAccount {
	e.T.Helper()
	ctx := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.Org.ID))
	sa, err := e.App.ServiceAccounts.CreateServiceAccount(ctx, "sync bot", role)
	if err != nil {
		e.T.Fatal(err)
	}
	return ServiceAccount{sa, ctx}
}

// AddKey registers a fresh RSA key for the account.
func (e *Env) AddKey(sa ServiceAccount) SigningKey {
	e.T.Helper()
	key, err := e.TryAddKey(sa)
	if err != nil {
		e.T.Fatal(err)
	}
	return key
}

// TryAddKey registers a fresh RSA key for the account, or says why not.
func (e *Env) TryAddKey(sa ServiceAccount) (SigningKey, error) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	keyID, err := e.App.ServiceAccounts.AddServiceAccountKey(sa.Ctx, sa.ID, string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})))
	return SigningKey{keyID, key}, err
}

// Assertion is a JWT assertion (RFC 7523) for the account, signed with key.
func (e *Env) Assertion(sa ServiceAccount, key SigningKey) string {
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key.Private}, (&jose.SignerOptions{}).WithHeader("kid", key.ID))
	now := time.Now()
	claims, _ := json.Marshal(map[string]any{"iss": sa.ID, "sub": sa.ID, "aud": e.Srv.URL, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix()})
	sig, _ := signer.Sign(claims)
	assertion, _ := sig.CompactSerialize()
	return assertion
}

// ServiceAccountToken creates a service account of role in tn's
// organization with a fresh key and exchanges a signed assertion for a JWT
// access token (RFC 7523) with scope ("" asks for every scope of the role).
func (e *Env) ServiceAccountToken(tn Tenant, role tenancy.Role, scope string) string {
	e.T.Helper()
	sa := e.NewServiceAccount(tn, role)
	status, tok, code := e.ExchangeAssertion(sa, e.AddKey(sa), scope)
	if status != http.StatusOK || tok == "" {
		e.T.Fatalf("jwt-bearer grant: %d %s", status, code)
	}
	return tok
}

// ExchangeAssertion signs an assertion with key and posts it to the token
// endpoint: the status, then the access token or the error code.
func (e *Env) ExchangeAssertion(sa ServiceAccount, key SigningKey, scope string) (status int, token, errorCode string) {
	e.T.Helper()
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {e.Assertion(sa, key)}}
	if scope != "" {
		form.Set("scope", scope)
	}
	res, err := http.PostForm(e.Srv.URL+"/oauth/token", form)
	if err != nil {
		e.T.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
	}
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out.AccessToken, out.Error
}
