package identity

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/jackc/pgx/v5"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// Lifetimes (spec 2.8 and decision 0008).
const (
	AccessTokenTTL    = 24 * time.Hour
	RefreshTokenTTL   = 30 * 24 * time.Hour
	JWTAccessTokenTTL = time.Hour
	authRequestTTL    = 30 * time.Minute
	codeTTL           = 5 * time.Minute
)

// storage implements op.Storage on PostgreSQL.
type storage struct {
	db       *store.DB
	users    users
	accounts ServiceAccounts
	keys     signingKeys
	now      func() time.Time
}

// users is what identity reads of tenancy's users table: one user of the
// organization in the context, without a permission check, since sign-in,
// consent and userinfo claims act before or on behalf of the user; and the
// purge of tenancy's credential cache, which holds access tokens too.
// *tenancy.Service implements it.
type users interface {
	LookupUser(ctx context.Context, id string) (tenancy.User, error)
	PurgeCredentials()
}

var (
	_ op.Storage                   = (*storage)(nil)
	_ op.CanSetUserinfoFromRequest = (*storage)(nil)
	_ op.JWTProfileTokenStorage    = (*storage)(nil)
)

// HashSecret is how the provider keeps a secret it is shown again, a
// client secret or a token: its SHA-256.
func HashSecret(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// NewSecret returns 256 random bits, base64url encoded.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// errNotFound marks unknown ids for the library.
type errNotFound struct{ what string }

func (e errNotFound) Error() string { return e.what + " not found" }
func (errNotFound) IsNotFound()     {}

// unavailable is a failed credential lookup as the token endpoint answers
// it: 503 server_error, which a client retries. The library would turn a
// plain error into invalid_client or invalid_grant, and a client told that
// drops a secret, refresh token or key that is fine.
func unavailable(err error) error {
	return op.NewStatusError(oidc.ErrServerError().WithDescription("the service is unavailable; retry shortly").WithParent(err),
		http.StatusServiceUnavailable)
}

func (s *storage) Health(ctx context.Context) error { return s.db.Ping(ctx) }

// --- clients ---

func (s *storage) client(ctx context.Context, id string) (*client, error) {
	if !ids.Valid(ids.Client, id) {
		// A link or form can hold anything; what is not a client id names
		// no client, and never reaches the database.
		return nil, errNotFound{"client"}
	}
	c := &client{}
	err := s.db.Unscoped().QueryRow(ctx, `SELECT id, org_id, name, description, redirect_uris, secret_hash, scopes FROM oauth_client_for_auth($1)`, id).
		Scan(&c.id, &c.orgID, &c.name, &c.description, &c.redirectURIs, &c.secretHash, &c.scopes)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNotFound{"client"}
	}
	if err != nil {
		return nil, unavailable(fmt.Errorf("load client: %w", err))
	}
	return c, nil
}

// GetClientByClientID answers an unknown client with invalid_client: the
// library turns any error that is not an OAuth error into server_error, a
// 500, and /oauth/authorize is reached with whatever client_id a link holds.
func (s *storage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.client(ctx, id)
	switch {
	case errors.As(err, new(errNotFound)):
		return nil, oidc.ErrInvalidClient().WithDescription("unknown client_id").WithParent(err)
	case err != nil:
		return nil, err
	}
	return c, nil
}

func (s *storage) AuthorizeClientIDSecret(ctx context.Context, id, secret string) error {
	c, err := s.client(ctx, id)
	if err != nil {
		return err
	}
	if c.public() || subtle.ConstantTimeCompare(c.secretHash, HashSecret(secret)) != 1 {
		return errors.New("invalid client secret")
	}
	return nil
}

// --- authorization requests ---

const authRequestColumns = `id, client_id, redirect_uri, scopes, state, nonce, response_type, response_mode,
	code_challenge, code_challenge_method, coalesce(org_id, ''), coalesce(user_id, ''),
	coalesce(auth_time, 'epoch'), done, coalesce(grant_id, '')`

func scanAuthRequest(row pgx.Row) (*authRequest, error) {
	a := &authRequest{}
	err := row.Scan(&a.id, &a.clientID, &a.redirectURI, &a.scopes, &a.state, &a.nonce, &a.responseType,
		&a.responseMode, &a.codeChallenge, &a.codeChallengeMethod, &a.orgID, &a.userID, &a.authTime, &a.done, &a.grantID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNotFound{"authorization request"}
	}
	return a, err
}

func (s *storage) CreateAuthRequest(ctx context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	c, err := s.client(ctx, req.ClientID)
	if err != nil {
		return nil, err
	}
	// PKCE: S256 only; public clients must use it (decision 0008).
	switch {
	case req.CodeChallenge == "" && c.public():
		return nil, oidc.ErrInvalidRequest().WithDescription("public clients must use PKCE (code_challenge with S256)")
	case req.CodeChallenge != "" && req.CodeChallengeMethod != oidc.CodeChallengeMethodS256:
		return nil, oidc.ErrInvalidRequest().WithDescription("code_challenge_method must be S256")
	}
	now := s.now()
	a := &authRequest{
		id: ids.New(authRequestPrefix), clientID: req.ClientID, redirectURI: req.RedirectURI, scopes: req.Scopes,
		state: req.State, nonce: req.Nonce, responseType: req.ResponseType, responseMode: req.ResponseMode,
		codeChallenge: req.CodeChallenge, codeChallengeMethod: string(req.CodeChallengeMethod),
	}
	_, err = s.db.Unscoped().Exec(ctx, `
		INSERT INTO oauth_auth_requests (id, client_id, redirect_uri, scopes, state, nonce, response_type,
		                                 response_mode, code_challenge, code_challenge_method, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		a.id, a.clientID, a.redirectURI, a.scopes, a.state, a.nonce, a.responseType, a.responseMode,
		a.codeChallenge, a.codeChallengeMethod, now.Add(authRequestTTL))
	if store.ForeignKey(err) != "" { // the client was deleted after it was read
		return nil, oidc.ErrInvalidClient().WithDescription("unknown client_id").WithParent(err)
	}
	if err != nil {
		return nil, fmt.Errorf("save auth request: %w", err)
	}
	return a, nil
}

// expiredKeptFor is how long past its expiry an auth request or a token is
// kept before the sweep deletes it.
const expiredKeptFor = 24 * time.Hour

// SweepExpired deletes the auth requests and the OAuth tokens that expired
// over a day ago: past their expiry they only serve replay detection.
// App.Start runs it periodically, off the request path.
func (p *Provider) SweepExpired(ctx context.Context) error {
	before := p.now().Add(-expiredKeptFor)
	if _, err := p.db.Unscoped().Exec(ctx, `DELETE FROM oauth_auth_requests WHERE expires_at < $1`, before); err != nil {
		return fmt.Errorf("sweep auth requests: %w", err)
	}
	_, err := p.db.SweepBefore(ctx, "sweep_oauth_tokens", before)
	return err
}

// AuthRequestByID answers an unknown or expired request with
// invalid_request: the callback is reached with whatever id a link holds,
// and the library logs any other error as a server fault.
func (s *storage) AuthRequestByID(ctx context.Context, id string) (op.AuthRequest, error) {
	a, err := s.authRequest(ctx, id)
	switch {
	case errors.As(err, new(errNotFound)):
		return nil, oidc.ErrInvalidRequest().WithDescription("unknown or expired authorization request").WithParent(err)
	case err != nil:
		return nil, err
	}
	return a, nil
}

// authRequestPrefix marks the ids of authorization requests.
const authRequestPrefix ids.Prefix = "arq_"

func (s *storage) authRequest(ctx context.Context, id string) (*authRequest, error) {
	if !ids.Valid(authRequestPrefix, id) {
		return nil, errNotFound{"authorization request"}
	}
	return scanAuthRequest(s.db.Unscoped().QueryRow(ctx,
		`SELECT `+authRequestColumns+` FROM oauth_auth_requests WHERE id = $1 AND expires_at > $2 AND code_used_at IS NULL`, id, s.now()))
}

// AuthRequestByCode finds the request a code was issued for. A code is
// single-use: presenting it again revokes every token it produced.
func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	var usedAt *time.Time
	var expiresAt time.Time
	row := s.db.Unscoped().QueryRow(ctx, `SELECT `+authRequestColumns+`, code_used_at, expires_at
		FROM oauth_auth_requests WHERE code_hash = $1`, HashSecret(code))
	a := &authRequest{}
	err := row.Scan(&a.id, &a.clientID, &a.redirectURI, &a.scopes, &a.state, &a.nonce, &a.responseType,
		&a.responseMode, &a.codeChallenge, &a.codeChallengeMethod, &a.orgID, &a.userID, &a.authTime, &a.done, &a.grantID,
		&usedAt, &expiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNotFound{"code"}
	}
	if err != nil {
		return nil, unavailable(err)
	}
	if usedAt != nil {
		if a.grantID != "" {
			if err := s.revokeGrant(store.WithOrg(ctx, a.orgID), a.grantID, oauthActor, revokedReplay); err != nil {
				return nil, err
			}
		}
		return nil, errors.New("code already used; its tokens are revoked")
	}
	if !expiresAt.After(s.now()) {
		return nil, errors.New("code expired")
	}
	return a, nil
}

func (s *storage) SaveAuthCode(ctx context.Context, id, code string) error {
	_, err := s.db.Unscoped().Exec(ctx, `UPDATE oauth_auth_requests SET code_hash = $2, expires_at = $3 WHERE id = $1`,
		id, HashSecret(code), s.now().Add(codeTTL))
	return err
}

// DeleteAuthRequest is called once a code was exchanged. The row is kept,
// marked used, until it expires, so a replayed code is recognized.
func (s *storage) DeleteAuthRequest(ctx context.Context, id string) error {
	_, err := s.db.Unscoped().Exec(ctx, `UPDATE oauth_auth_requests SET code_used_at = $2 WHERE id = $1`, id, s.now())
	return err
}

// completeAuthRequest records the signed-in user's approval with the
// scopes actually granted.
func (s *storage) completeAuthRequest(ctx context.Context, id string, c *tenancy.Caller, scopes []string) error {
	tag, err := s.db.Unscoped().Exec(ctx, `
		UPDATE oauth_auth_requests SET done = true, org_id = $2, user_id = $3, scopes = $4, auth_time = $5
		 WHERE id = $1 AND NOT done AND expires_at > $5`, id, c.OrgID, c.UserID, scopes, s.now())
	if err == nil && tag.RowsAffected() != 1 {
		err = errNotFound{"authorization request"}
	}
	return err
}

// --- grants and tokens ---

// grantFor returns the grant a token request belongs to, creating it when
// an authorization code is exchanged for the first time.
func (s *storage) grantFor(ctx context.Context, req op.TokenRequest) (grantID, orgID string, err error) {
	switch r := req.(type) {
	case *refreshRequest:
		return r.grantID, r.orgID, nil
	case *authRequest:
		ctx = store.WithOrg(ctx, r.orgID)
		grantID = ids.New("grt_")
		var earlier string
		err = s.db.Tx(ctx, func(ctx context.Context) error {
			q := s.db.Q(ctx)
			// The code is spent here, atomically: of concurrent exchanges
			// of one code (they all read it unspent), the first to claim it
			// wins and the others find its grant.
			tag, err := q.Exec(ctx, `UPDATE oauth_auth_requests SET grant_id = $2, code_used_at = $3 WHERE id = $1 AND grant_id IS NULL`,
				r.id, grantID, s.now())
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				// A statement of its own, so that its snapshot sees the
				// winner's commit the UPDATE waited for.
				return q.QueryRow(ctx, `SELECT grant_id FROM oauth_auth_requests WHERE id = $1`, r.id).Scan(&earlier)
			}
			_, err = q.Exec(ctx, `
				INSERT INTO oauth_grants (id, org_id, user_id, client_id, scopes, auth_time)
				VALUES ($1, app_org_id(), $2, $3, $4, $5)`, grantID, r.userID, r.clientID, r.scopes, r.authTime)
			return err
		})
		if err == nil && earlier != "" {
			// A replay, as AuthRequestByCode treats a code spent before.
			if err := s.revokeGrant(ctx, earlier, oauthActor, revokedReplay); err != nil {
				return "", "", err
			}
			return "", "", oidc.ErrInvalidGrant().WithDescription("code already used; its tokens are revoked")
		}
		return grantID, r.orgID, err
	}
	return "", "", fmt.Errorf("unsupported token request %T", req)
}

func (s *storage) insertToken(ctx context.Context, grantID, kind, secret string, ttl time.Duration) (time.Time, error) {
	exp := s.now().Add(ttl)
	_, err := s.db.Q(ctx).Exec(ctx, `
		INSERT INTO oauth_tokens (id, org_id, grant_id, kind, token_hash, expires_at)
		VALUES ($1, app_org_id(), $2, $3, $4, $5)`, ids.New("tok_"), grantID, kind, HashSecret(secret), exp)
	return exp, err
}

// CreateAccessToken issues an access token. Its id is a random secret;
// only its hash is stored, and the bearer the client sees is that id
// encrypted with the subject (op.CreateBearerToken).
func (s *storage) CreateAccessToken(ctx context.Context, req op.TokenRequest) (string, time.Time, error) {
	if jwtReq, ok := req.(*oidc.JWTTokenRequest); ok {
		// Service-account JWTs are self-contained and short-lived.
		return jwtReq.Subject + ":" + ids.New("jti_"), s.now().Add(JWTAccessTokenTTL), nil
	}
	grantID, orgID, err := s.grantFor(ctx, req)
	if err != nil {
		return "", time.Time{}, err
	}
	secret := NewSecret()
	exp, err := s.insertToken(store.WithOrg(ctx, orgID), grantID, "access", secret, AccessTokenTTL)
	return secret, exp, err
}

// CreateAccessAndRefreshTokens issues an access and a refresh token. When
// a refresh token is exchanged it is rotated: marked used, atomically, so
// it works exactly once.
func (s *storage) CreateAccessAndRefreshTokens(ctx context.Context, req op.TokenRequest, currentRefreshToken string) (string, string, time.Time, error) {
	grantID, orgID, err := s.grantFor(ctx, req)
	if err != nil {
		return "", "", time.Time{}, err
	}
	ctx = store.WithOrg(ctx, orgID)
	access, refresh := NewSecret(), NewSecret()
	var (
		exp         time.Time
		spent, gone bool
	)
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		if currentRefreshToken != "" {
			// Spent atomically: of concurrent refreshes with one token (all
			// read it unspent), one wins; the others present a spent
			// token, which is reuse, as TokenRequestByRefreshToken treats
			// a token spent before.
			tag, err := q.Exec(ctx, `UPDATE oauth_tokens SET used_at = $2
				WHERE org_id = app_org_id() AND token_hash = $1 AND kind = 'refresh' AND used_at IS NULL AND revoked_at IS NULL`,
				HashSecret(currentRefreshToken), s.now())
			if err != nil {
				return err
			}
			if tag.RowsAffected() != 1 {
				// Spent, or deleted with its user or app while the UPDATE
				// waited: a statement of its own sees that deletion.
				err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM oauth_tokens WHERE org_id = app_org_id() AND token_hash = $1)`,
					HashSecret(currentRefreshToken)).Scan(&spent)
				gone = !spent
				return err
			}
		}
		if exp, err = s.insertToken(ctx, grantID, "access", access, AccessTokenTTL); err != nil {
			return err
		}
		_, err = s.insertToken(ctx, grantID, "refresh", refresh, RefreshTokenTTL)
		return err
	})
	if err == nil && gone {
		return "", "", time.Time{}, oidc.ErrInvalidGrant().WithDescription("refresh token no longer valid")
	}
	if err == nil && spent {
		if err := s.revokeGrant(ctx, grantID, oauthActor, revokedReused); err != nil {
			return "", "", time.Time{}, err
		}
		return "", "", time.Time{}, oidc.ErrInvalidGrant().WithDescription("refresh token reused; the grant is revoked")
	}
	if err != nil {
		return "", "", time.Time{}, err
	}
	return access, refresh, exp, nil
}

// tokenInfo is a stored token with its grant.
type tokenInfo struct {
	id, orgID, grantID, kind, userID, clientID string
	role                                       tenancy.Role
	scopes                                     []string
	expiresAt, authTime                        time.Time
	usedAt, revokedAt, grantRevokedAt          *time.Time
}

func (t *tokenInfo) active(now time.Time) bool {
	return t.revokedAt == nil && t.grantRevokedAt == nil && t.usedAt == nil && t.expiresAt.After(now)
}

func (s *storage) token(ctx context.Context, secret string) (*tokenInfo, error) {
	t := &tokenInfo{}
	err := s.db.Unscoped().QueryRow(ctx, `
		SELECT token_id, org_id, grant_id, kind, expires_at, used_at, revoked_at, user_id, client_id,
		       scopes, auth_time, grant_revoked_at, role
		  FROM oauth_token_for_auth($1)`, HashSecret(secret)).
		Scan(&t.id, &t.orgID, &t.grantID, &t.kind, &t.expiresAt, &t.usedAt, &t.revokedAt, &t.userID,
			&t.clientID, &t.scopes, &t.authTime, &t.grantRevokedAt, &t.role)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNotFound{"token"}
	}
	if err != nil {
		return nil, unavailable(err)
	}
	return t, nil
}

// TokenRequestByRefreshToken validates a refresh token for exchange. A
// refresh token that was already rotated is a sign of theft: the whole
// grant is revoked.
func (s *storage) TokenRequestByRefreshToken(ctx context.Context, refreshToken string) (op.RefreshTokenRequest, error) {
	t, err := s.token(ctx, refreshToken)
	if err != nil {
		return nil, err
	}
	if t.kind != "refresh" {
		return nil, errors.New("not a refresh token")
	}
	if t.usedAt != nil {
		if err := s.revokeGrant(store.WithOrg(ctx, t.orgID), t.grantID, oauthActor, revokedReused); err != nil {
			return nil, err
		}
		return nil, errors.New("refresh token reused; the grant is revoked")
	}
	if !t.active(s.now()) {
		return nil, errors.New("refresh token expired or revoked")
	}
	return &refreshRequest{tokenID: t.id, grantID: t.grantID, orgID: t.orgID, userID: t.userID,
		clientID: t.clientID, scopes: t.scopes, authTime: t.authTime}, nil
}

func (s *storage) GetRefreshTokenInfo(ctx context.Context, clientID, token string) (string, string, error) {
	t, err := s.token(ctx, token)
	if errors.As(err, new(op.StatusError)) {
		return "", "", err // unread, not invalid: revocation must not go on as if it were
	}
	if err != nil || t.kind != "refresh" || t.clientID != clientID {
		return "", "", op.ErrInvalidRefreshToken
	}
	// The "token id" handed back to RevokeToken is the refresh token itself,
	// which RevokeToken hashes like any other.
	return t.userID, token, nil
}

// RevokeToken revokes the grant of an access or refresh token (RFC 7009):
// every token the grant produced stops working at once. Unknown tokens
// are not an error; a token that could not be read is (server.Revocation
// answers it 503), since the client would take the answer for done.
func (s *storage) RevokeToken(ctx context.Context, tokenOrTokenID, _, clientID string) *oidc.Error {
	t, err := s.token(ctx, tokenOrTokenID)
	if errors.As(err, new(op.StatusError)) {
		return oidc.ErrServerError().WithParent(err)
	}
	if err != nil {
		return nil
	}
	if t.clientID != clientID {
		return oidc.ErrInvalidClient().WithDescription("token was issued to another client")
	}
	if err := s.revokeGrant(store.WithOrg(ctx, t.orgID), t.grantID, audit.Actor{Kind: audit.ActorUser, ID: t.userID, ClientID: clientID}, revokedByApp); err != nil {
		return oidc.ErrServerError().WithParent(err)
	}
	return nil
}

// TerminateSession revokes every grant of userID to clientID (the
// library calls it when the user signs out of the app).
func (s *storage) TerminateSession(ctx context.Context, userID, clientID string) error {
	return s.revokeApp(ctx, userID, clientID, revokedSignOut)
}

// revokeApp revokes every grant of userID to clientID, for reason.
func (s *storage) revokeApp(ctx context.Context, userID, clientID, reason string) error {
	var orgID *string
	if err := s.db.Unscoped().QueryRow(ctx, `SELECT org_of($1)`, userID).Scan(&orgID); err != nil || orgID == nil {
		return err
	}
	ctx = store.WithOrg(ctx, *orgID)
	rows, err := s.db.Q(ctx).Query(ctx, `SELECT id FROM oauth_grants
		WHERE org_id = app_org_id() AND user_id = $1 AND client_id = $2 AND revoked_at IS NULL`, userID, clientID)
	if err != nil {
		return err
	}
	grants, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, g := range grants {
		if err := s.revokeGrant(ctx, g, audit.Actor{}, reason); err != nil {
			return err
		}
	}
	return nil
}

// Why a grant was revoked, as its oauth_grant.revoked audit entry says.
const (
	revokedByUser  = "revoked by the user on the account page"
	revokedByApp   = "revoked by the app (POST /oauth/revoke)"
	revokedReplay  = "a used authorization code was presented again"
	revokedReused  = "a rotated refresh token was presented again"
	revokedSignOut = "the user ended the app's session"
)

// oauthActor is the provider itself revoking a grant it believes stolen.
var oauthActor = audit.Actor{Kind: audit.ActorSystem, ID: "oauth"}

// revokeGrant revokes a grant and every token it produced, and audits the
// revocation (once) as oauth_grant.revoked on the client, performed by
// actor; a zero actor means the grant's user (through clientID when set).
func (s *storage) revokeGrant(ctx context.Context, grantID string, actor audit.Actor, reason string) error {
	return s.changeCredentials(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		now := s.now()
		var userID, clientID string
		err := q.QueryRow(ctx, `UPDATE oauth_grants SET revoked_at = $2 WHERE org_id = app_org_id() AND id = $1 AND revoked_at IS NULL
			RETURNING user_id, client_id`, grantID, now).Scan(&userID, &clientID)
		fresh := err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if _, err := q.Exec(ctx, `UPDATE oauth_tokens SET revoked_at = coalesce(revoked_at, $2) WHERE org_id = app_org_id() AND grant_id = $1`, grantID, now); err != nil {
			return err
		}
		if !fresh {
			return nil
		}
		if err := tenancy.NotifyCredentialsChanged(ctx, s.db); err != nil {
			return err
		}
		if actor.Kind == "" {
			actor.Kind, actor.ID = audit.ActorUser, userID
		}
		err = audit.Record(ctx, s.db, audit.Entry{Action: "oauth_grant.revoked", Actor: actor, Reason: reason,
			Target: audit.Target{Type: "oauth_client", ID: clientID}, Before: map[string]any{"grantId": grantID, "userId": userID}})
		return err
	})
}

// changeCredentials runs fn, which may revoke or narrow access tokens, in
// one transaction, and then drops this instance's cached credentials; fn
// notifies the other instances (tenancy.NotifyCredentialsChanged).
func (s *storage) changeCredentials(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := s.db.Tx(ctx, fn); err != nil {
		return err
	}
	s.users.PurgeCredentials()
	return nil
}

// --- claims ---

func (s *storage) fillUserinfo(ctx context.Context, info *oidc.UserInfo, orgID, userID string, scopes []string) error {
	ctx = store.WithOrg(ctx, orgID)
	u, err := s.users.LookupUser(ctx, userID)
	if errs.Is(err, errs.KindNotFound) {
		return errTokenInvalid
	}
	if err != nil {
		return unavailable(fmt.Errorf("load user: %w", err))
	}
	info.Subject = userID
	if slices.Contains(scopes, oidc.ScopeProfile) {
		info.Name = u.Name
		info.AppendClaims("org_id", orgID)
		info.AppendClaims("role", string(u.Role))
	}
	if slices.Contains(scopes, oidc.ScopeEmail) {
		info.Email = u.Email
		info.EmailVerified = false
	}
	return nil
}

func (s *storage) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	switch r := req.(type) {
	case *authRequest:
		return s.fillUserinfo(ctx, info, r.orgID, r.userID, scopes)
	case *refreshRequest:
		return s.fillUserinfo(ctx, info, r.orgID, r.userID, scopes)
	}
	return fmt.Errorf("unsupported request %T", req)
}

// SetUserinfoFromScopes is superseded by SetUserinfoFromRequest, which
// knows the organization.
func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

// errTokenInvalid is a userinfo request's token that is not a live access
// token: unknown, expired, revoked, or a refresh token.
var errTokenInvalid = errors.New("access token invalid")

func (s *storage) SetUserinfoFromToken(ctx context.Context, info *oidc.UserInfo, tokenID, _, _ string) error {
	t, err := s.token(ctx, tokenID)
	if errors.As(err, new(op.StatusError)) {
		return err
	}
	if err != nil || t.kind != "access" || !t.active(s.now()) {
		return errTokenInvalid
	}
	return s.fillUserinfo(ctx, info, t.orgID, t.userID, t.scopes)
}

// SetIntrospectionFromToken answers RFC 7662 for tokens issued to the
// asking client.
func (s *storage) SetIntrospectionFromToken(ctx context.Context, resp *oidc.IntrospectionResponse, tokenID, _, clientID string) error {
	t, err := s.token(ctx, tokenID)
	if errors.As(err, new(op.StatusError)) {
		noteUnread(ctx, err)
	}
	if err != nil || !t.active(s.now()) || t.clientID != clientID {
		return errors.New("token inactive")
	}
	resp.Scope = t.scopes
	resp.ClientID = t.clientID
	resp.Subject = t.userID
	resp.TokenType = oidc.BearerToken
	resp.Expiration = oidc.FromTime(t.expiresAt)
	resp.Audience = []string{t.clientID}
	resp.Claims = map[string]any{"org_id": t.orgID, "user_id": t.userID}
	return nil
}

// GetPrivateClaimsFromScopes adds the organization, role and granted
// scopes to the JWT access tokens of service accounts, which the API reads
// as the caller.
func (s *storage) GetPrivateClaimsFromScopes(ctx context.Context, subject, _ string, scopes []string) (map[string]any, error) {
	if !strings.HasPrefix(subject, string(ids.ServiceAccount)) {
		return nil, nil
	}
	orgID, role, err := s.serviceAccount(ctx, subject)
	if err != nil {
		return nil, err
	}
	return map[string]any{"org_id": orgID, "role": string(role), "scope": strings.Join(scopes, " ")}, nil
}

// --- signing keys ---

func (s *storage) SigningKey(ctx context.Context) (op.SigningKey, error) { return s.keys.signing(ctx) }

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(ctx context.Context) ([]op.Key, error) {
	keys, err := s.keys.published(ctx)
	if err != nil {
		return nil, errKeysUnavailable{err}
	}
	return keys, nil
}

// errKeysUnavailable marks a failure to read the signing keys, so a JWT
// that cannot be checked is told apart from one that is invalid.
type errKeysUnavailable struct{ err error }

func (e errKeysUnavailable) Error() string { return "signing keys unavailable: " + e.err.Error() }
func (e errKeysUnavailable) Unwrap() error { return e.err }
