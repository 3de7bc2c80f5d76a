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
	"github.com/assessd/assessd/internal/web"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/tenancy"
)

// Browser sessions of the login, consent and account pages.
const (
	sessionCookie   = "assessd_session"
	loginCSRFCookie = "assessd_login_csrf"
	sessionTTL      = 12 * time.Hour
)

// Session is a signed-in browser: its user, and the token its forms must
// carry (CSRF).
type Session struct {
	OrgID, UserID, CSRF string
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
	id := NewSecret()
	ctx = store.WithOrg(ctx, orgID)
	_, err := p.db.Q(ctx).Exec(ctx, `INSERT INTO browser_sessions (id_hash, org_id, user_id, csrf_token, expires_at)
		VALUES ($1, app_org_id(), $2, $3, $4)`, HashSecret(id), userID, NewSecret(), p.now().Add(sessionTTL))
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
func (p *Provider) session(r *http.Request) (*Session, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil, errNoSession
	}
	s := &Session{idHash: HashSecret(c.Value)}
	var expires time.Time
	err = p.db.Unscoped().QueryRow(r.Context(), `SELECT org_id, user_id, csrf_token, expires_at FROM browser_session_for_auth($1)`, s.idHash).
		Scan(&s.OrgID, &s.UserID, &s.CSRF, &expires)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !expires.After(p.now())) {
		return nil, errNoSession
	}
	return s, err
}

// endSession signs the browser out.
func (p *Provider) endSession(w http.ResponseWriter, r *http.Request, s *Session) error {
	ctx := store.WithOrg(r.Context(), s.OrgID)
	_, err := p.db.Q(ctx).Exec(ctx, `DELETE FROM browser_sessions WHERE org_id = app_org_id() AND id_hash = $1`, s.idHash)
	p.setCookie(w, sessionCookie, "", -time.Second)
	return err
}

// SignedIn runs h for a signed-in browser as that user, with every scope
// the user's role allows; POSTs must carry the session's CSRF token. A
// browser that is not signed in is sent to sign in.
func (p *Provider) SignedIn(h func(http.ResponseWriter, *http.Request, *Session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := p.session(r)
		if errors.Is(err, errNoSession) {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		if err != nil {
			web.FailedPage(w, r, err, "Your account is unavailable right now.")
			return
		}
		observability.Info(r.Context()).OrgID = s.OrgID
		if r.Method == http.MethodPost && !validCSRF(r.PostFormValue("csrf"), s.CSRF) {
			web.FailPage(w, r, http.StatusForbidden, "Request refused", "The form was not sent from this site.")
			return
		}
		u, err := p.storage.users.LookupUser(store.WithOrg(r.Context(), s.OrgID), s.UserID)
		if err != nil {
			p.UserGone(w, r, s)
			return
		}
		caller := &tenancy.Caller{Kind: tenancy.KindSession, OrgID: s.OrgID, UserID: s.UserID, CredentialID: "session",
			Role: u.Role, Scopes: tenancy.ScopesForRole(u.Role)}
		h(w, r.WithContext(tenancy.WithCaller(r.Context(), caller)), s)
	}
}

// UserGone ends the session of a user who no longer exists and sends the
// browser to sign in.
func (p *Provider) UserGone(w http.ResponseWriter, r *http.Request, s *Session) {
	_ = p.endSession(w, r, s)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// validCSRF compares a form's token with the expected one in constant time.
func validCSRF(form, expected string) bool {
	return expected != "" && subtle.ConstantTimeCompare([]byte(form), []byte(expected)) == 1
}
