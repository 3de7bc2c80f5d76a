package pages_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

func TestMain(m *testing.M) { apptest.Main(m) }

// TestDeveloperAreaLTIPlatforms registers a platform in the developer
// area: the tool's configuration is on the page, a bad URL is refused in
// the form's words, edits and removal work, and teachers are kept out.
func TestDeveloperAreaLTIPlatforms(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	admin := e.NewOAuthApp(tn, tenancy.RoleAdmin, clients.ClientInput{})
	b := e.NewBrowser()
	csrf := e.SignIn(b, admin).Field("csrf")

	list := b.Get(e.Srv.URL + "/developer/lti")
	for _, want := range []string{`<code id="tool-login">` + e.Srv.URL + `/lti/login</code>`, `<code id="tool-launch">` + e.Srv.URL + `/lti/launch</code>`,
		`<code id="tool-jwks">` + e.Srv.URL + `/lti/jwks</code>`, "No platforms yet."} {
		if list.Status != 200 || !strings.Contains(list.Body, want) {
			t.Fatalf("platforms page lacks %s: %d\n%s", want, list.Status, list.Body)
		}
	}
	form := url.Values{"csrf": {csrf}, "name": {"Moodle"}, "issuer": {"https://moodle.school.example"}, "clientId": {"abc123"},
		"deploymentIds": {"1\n\n2 \n"}, "authLoginUrl": {"https://moodle.school.example/mod/lti/auth.php"},
		"accessTokenUrl": {"https://93.184.215.14/mod/lti/token.php"}, "jwksUrl": {"https://10.0.0.5/mod/lti/certs.php"}}
	if bad := b.Post(e.Srv.URL+"/developer/lti", form); bad.Status != 400 || !strings.Contains(bad.Body, "jwksUrl") || !strings.Contains(bad.Body, "abc123") {
		t.Fatalf("a private JWKS URL: %d\n%s", bad.Status, bad.Body)
	}
	form.Set("jwksUrl", "https://93.184.215.14/mod/lti/certs.php")
	created := b.Post(e.Srv.URL+"/developer/lti", form)
	id := regexp.MustCompile(`/developer/lti/(ltp_[0-9A-Z]+)`).FindStringSubmatch(created.URL.Path + created.Body)
	if created.Status != 200 || id == nil || !strings.Contains(created.Body, "Saved.") || !strings.Contains(created.Body, `<code id="tool-deep-linking">`) {
		t.Fatalf("registered: %d %s\n%s", created.Status, created.URL, created.Body)
	}
	got := e.Do("GET", "/lti/platforms/"+id[1], tn.Keys[tenancy.RoleAdmin], nil).Must(t, 200).Body
	if d := got["deploymentIds"].([]any); len(d) != 2 || d[1] != "2" || got["name"] != "Moodle" {
		t.Fatalf("the registration: %v", got)
	}
	form.Set("deploymentIds", "3")
	if edited := b.Post(e.Srv.URL+"/developer/lti/"+id[1], form); edited.Status != 200 || !strings.Contains(edited.Body, ">3</textarea>") {
		t.Fatalf("edited: %d\n%s", edited.Status, edited.Body)
	}
	if removed := b.Post(e.Srv.URL+"/developer/lti/"+id[1]+"/delete", url.Values{"csrf": {csrf}}); removed.Status != 200 || !strings.Contains(removed.Body, "launches are refused") {
		t.Fatalf("removed: %d\n%s", removed.Status, removed.Body)
	}
	e.Do("GET", "/lti/platforms/"+id[1], tn.Keys[tenancy.RoleAdmin], nil).Must(t, 404)

	teacher := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{})
	tb := e.NewBrowser()
	e.SignIn(tb, teacher)
	if p := tb.Get(e.Srv.URL + "/developer/lti"); p.Status != http.StatusForbidden {
		t.Fatalf("a teacher's platforms page: %d", p.Status)
	}
}
