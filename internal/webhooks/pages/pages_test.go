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

// TestDeveloperAreaWebhooks manages a webhook endpoint in the developer
// area: the secret is shown once, internal targets are refused, edits and
// rotation work, and teachers are kept out.
func TestDeveloperAreaWebhooks(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	admin := e.NewOAuthApp(tn, tenancy.RoleAdmin, clients.ClientInput{})
	b := e.NewBrowser()
	csrf := e.SignIn(b, admin).Field("csrf")

	bad := b.Post(e.Srv.URL+"/developer/webhooks", url.Values{"csrf": {csrf}, "url": {"https://169.254.169.254/latest"}, "events": {"user.created"}})
	if bad.Status != http.StatusBadRequest || !strings.Contains(bad.Body, "metadata address") {
		t.Fatalf("metadata target: %d", bad.Status)
	}
	created := b.Post(e.Srv.URL+"/developer/webhooks", url.Values{"csrf": {csrf}, "url": {"https://93.184.215.14/hooks"},
		"description": {"Gradebook"}, "events": {"result.graded", "user.created"}})
	codes := created.Codes()
	if len(codes) < 2 || !strings.HasPrefix(codes[0], "whe_") || !strings.HasPrefix(codes[1], "whsec_") {
		t.Fatalf("endpoint ID and secret not shown on save:\n%s", created.Body)
	}
	id, secret := codes[0], codes[1]
	if list := b.Get(e.Srv.URL + "/developer/webhooks"); !strings.Contains(list.Body, "Gradebook") || strings.Contains(list.Body, secret) {
		t.Fatal("the list lacks the endpoint or shows its secret again")
	}
	edited := b.Post(e.Srv.URL+"/developer/webhooks/"+id, url.Values{"csrf": {csrf}, "url": {"https://93.184.215.14/hooks"},
		"description": {"Gradebook 2"}, "events": {"user.deleted"}})
	if !strings.Contains(edited.Body, "Gradebook 2") || !strings.Contains(edited.Body, `value="user.deleted" checked`) {
		t.Fatalf("edit: %d", edited.Status)
	}
	rotated := b.Post(e.Srv.URL+"/developer/webhooks/"+id+"/rotate", url.Values{"csrf": {csrf}})
	if m := regexp.MustCompile(`<code>(whsec_[^<]+)</code>`).FindStringSubmatch(rotated.Body); m == nil || m[1] == secret {
		t.Fatal("rotation did not show a new secret")
	}
	b.Post(e.Srv.URL+"/developer/webhooks/"+id+"/delete", url.Values{"csrf": {csrf}})
	if strings.Contains(b.Get(e.Srv.URL+"/developer/webhooks").Body, id) {
		t.Fatal("deleted endpoint still listed")
	}

	teacher := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{})
	tb := e.NewBrowser()
	e.SignIn(tb, teacher)
	if p := tb.Get(e.Srv.URL + "/developer/webhooks"); p.Status != http.StatusForbidden {
		t.Fatalf("teacher in the webhooks pages: %d", p.Status)
	}
}
