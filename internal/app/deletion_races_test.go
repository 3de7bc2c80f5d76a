package app_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/assessd/assessd/internal/identity"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// TestWritesRacingADeletion sends requests that name a folder, an exam or
// an OAuth client while that row's deletion commits under them: each
// answers as it would a moment later, never with a server fault.
func TestWritesRacingADeletion(t *testing.T) {
	t.Parallel()
	url := storetest.NewURL(t)
	e := newEnvAt(t, url)
	school, vendor := e.newTenant("US", "pro"), e.newTenant("DE", "pro")
	teacher := school.keys[tenancy.RoleTeacher]
	folder := func() string {
		return str(e.do("POST", "/folders", teacher, map[string]any{"name": "Term 1"}).must(t, http.StatusOK).body, "id")
	}
	client := func() string {
		return e.newOAuthApp(vendor, tenancy.RoleTeacher, identity.ClientInput{}).client.ID
	}
	exam := func() string {
		return str(e.do("POST", "/exams", teacher, map[string]any{"name": "Sums", "language": "en"}).must(t, http.StatusOK).body, "id")
	}
	var blank bytes.Buffer
	if err := png.Encode(&blank, image.NewGray(image.Rect(0, 0, 200, 280))); err != nil {
		t.Fatal(err)
	}
	page := blank.Bytes()
	cases := []struct {
		name    string
		deleted func() string // the row to delete, made before the request
		table   string
		request func(id string) response
		status  int
		reason  string
	}{
		{"an exam created in a folder", folder, "folders", func(id string) response {
			return e.do("POST", "/exams", teacher, map[string]any{"name": "Sums", "language": "en", "folderId": id})
		}, http.StatusBadRequest, "INVALID_ARGUMENT"},
		{"an exam moved into a folder", folder, "folders", func(id string) response {
			return e.do("PATCH", "/exams/"+exam(), teacher, map[string]any{"folderId": id})
		}, http.StatusBadRequest, "INVALID_ARGUMENT"},
		{"a folder created in a folder", folder, "folders", func(id string) response {
			return e.do("POST", "/folders", teacher, map[string]any{"name": "Week 1", "parentId": id})
		}, http.StatusBadRequest, "INVALID_ARGUMENT"},
		{"a folder moved into a folder", folder, "folders", func(id string) response {
			return e.do("PATCH", "/folders/"+folder(), teacher, map[string]any{"parentId": id})
		}, http.StatusBadRequest, "INVALID_ARGUMENT"},
		{"an answer-sheet scan of an exam", exam, "exams", func(id string) response {
			return e.upload(id, teacher, page)
		}, http.StatusNotFound, "EXAM_NOT_FOUND"},
		{"another organization's OAuth client allowed", client, "oauth_clients", func(id string) response {
			return e.do("POST", "/org/allowed-clients", school.keys[tenancy.RoleOwner], map[string]any{"clientId": id, "scopes": []string{"audit-logs:write"}})
		}, http.StatusBadRequest, "INVALID_ARGUMENT"},
	}
	for _, c := range cases {
		id := c.deleted()
		var r response
		_ = storetest.DeleteDuring(t, url, `DELETE FROM `+c.table+` WHERE id = $1`, []any{id}, func() error {
			r = c.request(id)
			return nil
		})
		if r.status != c.status || r.reason() != c.reason {
			t.Errorf("%s as it is deleted: %d %s, want %d %s", c.name, r.status, r.raw, c.status, c.reason)
		}
	}
}

// TestConcurrentFolderMoves moves one folder into another while that one
// moves too, many times over: each move waits for its turn and none fails.
// A move holds its folder's row lock while it waits for the organization's
// folder lock, so that lock must not conflict with the parent's share lock
// that the other move takes.
func TestConcurrentFolderMoves(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	teacher := e.newTenant("US", "pro").keys[tenancy.RoleTeacher]
	folder := func(name string) string {
		return str(e.do("POST", "/folders", teacher, map[string]any{"name": name}).must(t, http.StatusOK).body, "id")
	}
	for range 20 {
		x, y, z := folder("x"), folder("y"), folder("z")
		var wg sync.WaitGroup
		statuses := make([]response, 2)
		for i, move := range [][2]string{{x, y}, {y, z}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = e.do("PATCH", "/folders/"+move[0], teacher, map[string]any{"parentId": move[1]})
			}()
		}
		wg.Wait()
		for _, r := range statuses {
			if r.status != http.StatusOK {
				t.Fatalf("concurrent folder moves: %d %s", r.status, r.raw)
			}
		}
	}
}

// TestOAuthRacingDeletions authorizes, signs in, consents, makes an API
// key, and exchanges a code or a refresh token while the user or the app is
// deleted: each answers as it would a moment later (invalid_client, a wrong
// password, a stale link, sign in again, invalid_grant), never
// server_error, a 503 or a token reuse.
func TestOAuthRacingDeletions(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewURL(t)
	e := newEnvAt(t, dbURL)
	ctx := context.Background()
	newApp := func() *oauthApp {
		a := e.newOAuthApp(e.newTenant("US", "pro"), tenancy.RoleTeacher, identity.ClientInput{})
		a.conf.Scopes = []string{"profile", "offline_access"}
		return a
	}
	exchange := func(a *oauthApp) func() error {
		verifier := oauth2.GenerateVerifier()
		code := e.codeFor(a, oauth2.S256ChallengeOption(verifier))
		return func() error {
			_, err := a.conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
			return err
		}
	}
	refresh := func(a *oauthApp) func() error {
		tok := e.token(a)
		return func() error {
			_, err := a.conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
			return err
		}
	}
	user := func(a *oauthApp) (string, string) { return "users", a.user.ID }
	app := func(a *oauthApp) (string, string) { return "oauth_clients", a.client.ID }
	cases := []struct {
		name    string
		request func(*oauthApp) func() error
		deleted func(*oauthApp) (table, id string)
		want    string
	}{
		{"a code exchanged as its user is deleted", exchange, user, "invalid_grant"},
		{"a code exchanged as its app is deleted", exchange, app, "invalid_client"},
		{"a refresh token exchanged as its user is deleted", refresh, user, "invalid_grant"},
		{"a refresh token exchanged as its app is deleted", refresh, app, "invalid_grant"},
	}
	// The authorization request is stored after its client is read. Its
	// redirect URI was checked by then, so the error goes back to the app.
	a := newApp()
	var p page
	_ = storetest.DeleteDuring(t, dbURL, `DELETE FROM oauth_clients WHERE id = $1`, []any{a.client.ID}, func() error {
		p = e.newBrowser().get(a.conf.AuthCodeURL("state-123"))
		return nil
	})
	if p.status != http.StatusFound || !strings.Contains(p.location, "error=invalid_client") {
		t.Errorf("authorizing as the app is deleted: %d %s, want a redirect with invalid_client", p.status, p.location)
	}
	// Signing in reads the user, then stores the browser session.
	a = newApp()
	b := e.newBrowser()
	login := b.get(a.conf.AuthCodeURL("state-123"))
	form := url.Values{"csrf": {login.field("csrf")}, "authRequestID": {login.field("authRequestID")}, "email": {a.email}, "password": {a.password}}
	_ = storetest.DeleteDuring(t, dbURL, `DELETE FROM users WHERE id = $1`, []any{a.user.ID}, func() error {
		p = b.post(e.srv.URL+"/login", form)
		return nil
	})
	if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "The email or password is not correct.") {
		t.Errorf("signing in as the user is deleted: %d\n%s", p.status, p.body)
	}
	// Consent given as the app or the user is deleted.
	consentRacing := func(deleted func(*oauthApp) (table, id string)) page {
		a := newApp()
		b := e.newBrowser()
		login := b.get(a.conf.AuthCodeURL("state-123"))
		consent := b.post(e.srv.URL+"/login", url.Values{"csrf": {login.field("csrf")}, "authRequestID": {login.field("authRequestID")}, "email": {a.email}, "password": {a.password}})
		table, id := deleted(a)
		var p page
		_ = storetest.DeleteDuring(t, dbURL, `DELETE FROM `+table+` WHERE id = $1`, []any{id}, func() error {
			p = b.post(e.srv.URL+"/consent", url.Values{"csrf": {consent.field("csrf")}, "authRequestID": {consent.field("authRequestID")}, "decision": {"approve"}})
			return nil
		})
		return p
	}
	if p := consentRacing(app); p.status != http.StatusBadRequest || !strings.Contains(p.body, "This sign-in link is no longer valid") {
		t.Errorf("consenting as the app is deleted: %d\n%s", p.status, p.body)
	}
	if p := consentRacing(user); p.status != http.StatusOK || p.url.Path != "/login" || !strings.Contains(p.body, `name="password"`) {
		t.Errorf("consenting as the user is deleted: %d %s, want the sign-in form", p.status, p.url)
	}

	// An API key made on the account page as its user is deleted.
	a = newApp()
	b = e.newBrowser()
	csrf := e.signIn(b, a).field("csrf")
	_ = storetest.DeleteDuring(t, dbURL, `DELETE FROM users WHERE id = $1`, []any{a.user.ID}, func() error {
		p = b.post(e.srv.URL+"/account/api-keys", url.Values{"csrf": {csrf}, "name": {"export"}})
		return nil
	})
	if p.status != http.StatusOK || p.url.Path != "/login" {
		t.Errorf("an API key made as its user is deleted: %d %s, want the sign-in page", p.status, p.url)
	}
	for _, c := range cases {
		a := newApp()
		send := c.request(a)
		table, id := c.deleted(a)
		err := storetest.DeleteDuring(t, dbURL, `DELETE FROM `+table+` WHERE id = $1`, []any{id}, send)
		// A token deleted with its grant was not reused: reporting reuse
		// would tell the app and its user of a theft that never was.
		if got := oauthError(err); got != c.want || strings.Contains(err.Error(), "reused") {
			t.Errorf("%s: %v, want %s", c.name, err, c.want)
		}
	}
}
