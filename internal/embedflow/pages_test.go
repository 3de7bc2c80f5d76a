package embedflow_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/assessd/assessd/internal/embedflow"
	"github.com/assessd/assessd/internal/testkit/browsertest"
	"github.com/assessd/assessd/internal/testkit/redistest"
	"github.com/assessd/assessd/tenancy"
)

// serve runs the embed pages of f on a test server.
func serve(t *testing.T, f fixture) *httptest.Server {
	mux := http.NewServeMux()
	f.svc.Routes(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// postForm posts form to target, as htmx does when htmx is set, and
// returns the status and the body.
func postForm(t *testing.T, target string, form url.Values, htmx bool) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return send(t, req, htmx)
}

// send sends req, as htmx does when htmx is set, and returns the status
// and the body.
func send(t *testing.T, req *http.Request, htmx bool) (int, string) {
	t.Helper()
	if htmx {
		req.Header.Set("HX-Request", "true")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestGenerateExamPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, redistest.Client(t))
	srv := serve(t, f)
	sess, err := f.svc.Create(f.teacher, embedflow.NewSession{
		Flow: "generate-exam", ActorID: f.users[tenancy.RoleTeacher].ID,
		Strings:        map[string]string{"account.attributes.subject-name": "Course"},
		Presets:        map[string]any{"studentLevel": "7th grade", "hideStudentLevel": true, "durationMinutes": 45.0},
		AllowedOrigins: []string{"https://lms.example.com"},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(srv.URL + "/embed/" + sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors https://lms.example.com") {
		t.Fatalf("CSP %q does not let the host frame the page", csp)
	}
	if res.Header.Get("X-Frame-Options") != "" {
		t.Fatal("X-Frame-Options would forbid framing")
	}

	ctx := browsertest.NewChrome(t)
	browsertest.CheckPage(t, ctx, srv.URL+"/embed/"+sess.ID, "embed-generate-exam")
	var subjectLabel, durationLabel, levelValue, font string
	var levelVisible bool
	var shot []byte
	err = chromedp.Run(ctx,
		chromedp.Navigate(srv.URL+"/embed/"+sess.ID),
		chromedp.WaitVisible(`#subject`, chromedp.ByQuery),
		chromedp.Evaluate(`getComputedStyle(document.body).fontFamily`, &font),
		chromedp.Text(`label[for=subject]`, &subjectLabel, chromedp.ByQuery),
		chromedp.Text(`label[for=durationMinutes]`, &durationLabel, chromedp.ByQuery),
		chromedp.Evaluate(`!!document.querySelector('#studentLevel')`, &levelVisible),
		chromedp.Value(`input[name=studentLevel]`, &levelValue, chromedp.ByQuery),
		chromedp.FullScreenshot(&shot, 100),
	)
	if err != nil {
		t.Fatal(err)
	}
	browsertest.SaveArtifact(t, "embed-generate-exam.png", shot)
	// Each platform's interface font, never the browser's serif default.
	if !strings.HasPrefix(font, `system-ui, -apple-system, "Segoe UI", Roboto, `) || !strings.HasSuffix(font, ", sans-serif") {
		t.Errorf("the page's font is %q", font)
	}
	if subjectLabel != "Course" || durationLabel != "Duration (minutes)" {
		t.Fatalf("labels: subject %q (want the theme's Course), duration %q (want the default wording)", subjectLabel, durationLabel)
	}
	if levelVisible || levelValue != "7th grade" {
		t.Fatalf("hidden student level: field shown %v, preset value %q", levelVisible, levelValue)
	}

	// Shift + Control + Tilde opens the dev tools; the language icon shows
	// the Translation keys view.
	var keys string
	err = chromedp.Run(ctx,
		chromedp.KeyEvent("~", chromedp.KeyModifiers(input.ModifierShift|input.ModifierCtrl)),
		chromedp.WaitVisible(`#assessd-devtools`, chromedp.ByQuery),
		chromedp.Click(`#assessd-devtools button[aria-label=Language]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#assessd-devtools-view table`, chromedp.ByQuery),
		chromedp.Text(`#assessd-devtools-view`, &keys, chromedp.ByQuery),
		chromedp.FullScreenshot(&shot, 100),
	)
	if err != nil {
		t.Fatalf("dev tools: %v", err)
	}
	browsertest.SaveArtifact(t, "embed-devtools-translation-keys.png", shot)
	for _, want := range []string{"Translation keys", "account.attributes.subject-name", "Course", "account.attributes.duration-name"} {
		if !strings.Contains(keys, want) {
			t.Errorf("Translation keys view lacks %q:\n%s", want, keys)
		}
	}
	if strings.Contains(keys, "account.attributes.studentLevel-name") {
		t.Error("Translation keys view lists a hidden label")
	}
}

func TestExpiredSessionPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, redistest.Client(t))
	srv := serve(t, f)
	for _, id := range []string{"emb_" + strings.Repeat("b", 32), "nonsense"} {
		res, err := http.Get(srv.URL + "/embed/" + id)
		if err != nil {
			t.Fatal(err)
		}
		body := make([]byte, 4096)
		n, _ := res.Body.Read(body)
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound || !strings.Contains(string(body[:n]), "This session has expired") {
			t.Fatalf("%s: %d %s", id, res.StatusCode, body[:n])
		}
	}
	browsertest.CheckPage(t, browsertest.NewChrome(t), srv.URL+"/embed/nonsense", "embed-expired")
}

// TestThemedPage checks that a host's look reaches the page through the
// nonce'd style element, with no inline script or style the CSP would
// block, and that Arabic is laid out right to left.
func TestThemedPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, redistest.Client(t))
	srv := serve(t, f)
	radius := int32(12)
	sess, err := f.svc.Create(f.teacher, embedflow.NewSession{
		Flow: "generate-exam", ActorID: f.users[tenancy.RoleTeacher].ID,
		Look: embedflow.Look{Colors: embedflow.Colors{Primary: "#6B1F80", Text: "#202020", Background: "#FFFDF5"}, FontFamily: "Georgia, serif", Radius: &radius, Language: "ar"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var nonces []string
	for range 2 {
		res, err := http.Get(srv.URL + "/embed/" + sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		csp := res.Header.Get("Content-Security-Policy")
		nonce, _, _ := strings.Cut(strings.SplitN(csp, "'nonce-", 2)[1], "'")
		if strings.Contains(csp, "unsafe-inline") || !strings.Contains(string(body), `<style nonce="`+nonce+`">`) || strings.Contains(string(body), "style=") {
			t.Fatalf("CSP %q does not match the page:\n%s", csp, body)
		}
		nonces = append(nonces, nonce)
	}
	if nonces[0] == nonces[1] {
		t.Fatal("the CSP nonce is reused across responses")
	}
	ctx := browsertest.NewChrome(t)
	browsertest.CheckPage(t, ctx, srv.URL+"/embed/"+sess.ID, "embed-themed-rtl")
	var dir, accent, font, radiusPx string
	var htmx bool
	err = chromedp.Run(ctx,
		chromedp.Evaluate(`document.documentElement.dir`, &dir),
		chromedp.Evaluate(`getComputedStyle(document.querySelector("button[type=submit]")).backgroundColor`, &accent),
		chromedp.Evaluate(`getComputedStyle(document.body).fontFamily`, &font),
		chromedp.Evaluate(`getComputedStyle(document.querySelector("#subject")).borderTopLeftRadius`, &radiusPx),
		chromedp.Evaluate(`typeof htmx === "object"`, &htmx),
	)
	if err != nil {
		t.Fatal(err)
	}
	if dir != "rtl" || accent != "rgb(107, 31, 128)" || font != "Georgia, serif" || radiusPx != "12px" || !htmx {
		t.Fatalf("themed page: dir %q, accent %q, font %q, radius %q, htmx loaded %v", dir, accent, font, radiusPx, htmx)
	}
}
