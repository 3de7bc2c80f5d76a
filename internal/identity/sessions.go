package identity

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/store"
)

// Browser sessions of the login, consent and account pages.
const (
	sessionCookie   = "assessd_session"
	loginCSRFCookie = "assessd_login_csrf"
	sessionTTL      = 12 * time.Hour
)

// session is a signed-in browser.
type session struct {
	orgID, userID, csrf string
	idHash              []byte
}

func (p *Provider) secureCookies() bool { return strings.HasPrefix(p.cfg.Issuer, "https://") }

func (p *Provider) setCookie(w http.ResponseWriter, name, value string, maxAge time.Duration) {
	// G124: Secure follows the issuer's scheme; the dev server and the
	// tests serve plain http on localhost.
	http.SetCookie(w, &http.Cookie{ //nolint:gosec // G124, see above
		Name: name, Value: value, Path: "/", MaxAge: int(maxAge.Seconds()),
		HttpOnly: true, Secure: p.secureCookies(), SameSite: http.SameSiteLaxMode,
	})
}

// startSession signs the browser in as userID, or answers errBadCredentials
// when the user was deleted since its password was checked.
func (p *Provider) startSession(ctx context.Context, w http.ResponseWriter, orgID, userID string) error {
	id := newSecret()
	ctx = store.WithOrg(ctx, orgID)
	_, err := p.db.Q(ctx).Exec(ctx, `INSERT INTO browser_sessions (id_hash, org_id, user_id, csrf_token, expires_at)
		VALUES ($1, app_org_id(), $2, $3, $4)`, hashSecret(id), userID, newSecret(), p.now().Add(sessionTTL))
	if store.ForeignKey(err) != "" {
		// The user was deleted after the password was checked: there is
		// no such account any more.
		return errBadCredentials
	}
	if err != nil {
		return err
	}
	p.setCookie(w, sessionCookie, id, sessionTTL)
	return nil
}

var errNoSession = errors.New("not signed in")

// session returns the browser's live session.
func (p *Provider) session(r *http.Request) (*session, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil, errNoSession
	}
	s := &session{idHash: hashSecret(c.Value)}
	var expires time.Time
	err = p.db.Unscoped().QueryRow(r.Context(), `SELECT org_id, user_id, csrf_token, expires_at FROM browser_session_for_auth($1)`, s.idHash).
		Scan(&s.orgID, &s.userID, &s.csrf, &expires)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !expires.After(p.now())) {
		return nil, errNoSession
	}
	return s, err
}

// endSession signs the browser out.
func (p *Provider) endSession(w http.ResponseWriter, r *http.Request, s *session) error {
	ctx := store.WithOrg(r.Context(), s.orgID)
	_, err := p.db.Q(ctx).Exec(ctx, `DELETE FROM browser_sessions WHERE org_id = app_org_id() AND id_hash = $1`, s.idHash)
	p.setCookie(w, sessionCookie, "", -time.Second)
	return err
}

// validCSRF compares a form's token with the expected one in constant time.
func validCSRF(form, expected string) bool {
	return expected != "" && subtle.ConstantTimeCompare([]byte(form), []byte(expected)) == 1
}
