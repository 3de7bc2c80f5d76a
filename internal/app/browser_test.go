package app_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/internal/testkit/browsertest"
	"github.com/assessd/assessd/tenancy"
)

func TestLoginAndConsentInABrowser(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("DE", "pro")
	callback := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("<!doctype html><title>back in the app</title><p id=\"received\">code received</p>"))
	}))
	defer callback.Close()
	a := e.NewOAuthApp(tn, tenancy.RoleTeacher, clients.ClientInput{
		Name: "Gradebook Sync", Description: "Copies grades into your school's gradebook", RedirectURIs: []string{callback.URL + "/cb"},
	})
	a.Conf.RedirectURL = callback.URL + "/cb"
	a.Conf.Scopes = []string{"openid", "profile", "users:read"}
	ctx := browsertest.NewChrome(t)

	var consentText, finalURL string
	var shot []byte
	err := chromedp.Run(ctx,
		chromedp.Navigate(a.Conf.AuthCodeURL("browser-state", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))),
		chromedp.WaitVisible(`#email`, chromedp.ByQuery),
		chromedp.SendKeys(`#email`, a.Email, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, a.Password, chromedp.ByQuery),
		chromedp.Click(`button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`button[value=approve]`, chromedp.ByQuery),
		chromedp.Text(`main`, &consentText, chromedp.ByQuery),
		chromedp.FullScreenshot(&shot, 100), // 100: PNG
		chromedp.Click(`button[value=approve]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#received`, chromedp.ByQuery),
		chromedp.Location(&finalURL),
	)
	if err != nil {
		t.Fatalf("browser flow: %v", err)
	}
	browsertest.SaveArtifact(t, "oauth-consent.png", shot)
	for _, want := range []string{"Gradebook Sync", "Copies grades into your school's gradebook", "See the people in your organization", "Approve", "Deny"} {
		if !strings.Contains(consentText, want) {
			t.Errorf("consent screen lacks %q:\n%s", want, consentText)
		}
	}
	if !strings.HasPrefix(finalURL, callback.URL+"/cb?") || !strings.Contains(finalURL, "code=") || !strings.Contains(finalURL, "state=browser-state") {
		t.Fatalf("approve ended at %s", finalURL)
	}
}

func TestAPIReferenceInABrowser(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	ctx := browsertest.NewChrome(t)
	// Redoc's bundle links its badge image from its CDN; the page's
	// Content-Security-Policy must stop that (and anything else) before it
	// leaves the browser.
	var mu sync.Mutex
	outside := map[network.RequestID]string{}
	chromedp.ListenTarget(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			u := ev.Request.URL
			if !strings.HasPrefix(u, e.Srv.URL) && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "blob:") {
				outside[ev.RequestID] = u
			}
		case *network.EventLoadingFailed:
			if ev.BlockedReason == network.BlockedReasonCsp {
				delete(outside, ev.RequestID)
			}
		}
	})
	var text string
	var shot []byte
	err := chromedp.Run(ctx, network.Enable(),
		chromedp.Navigate(e.Srv.URL+"/docs"),
		chromedp.WaitVisible(`.api-content h2`, chromedp.ByQuery),
		chromedp.Sleep(300*time.Millisecond), // let late resource requests settle
		chromedp.Text(`body`, &text, chromedp.ByQuery),
		// The viewport: the whole reference is taller than Chrome
		// captures in one image.
		chromedp.CaptureScreenshot(&shot),
	)
	if err != nil {
		t.Fatalf("docs page: %v", err)
	}
	browsertest.SaveArtifact(t, "api-reference.png", shot)
	for _, want := range []string{"UserService", "OAuth", "Returns one user of the caller's organization.",
		"Exchange a code, a refresh token or a JWT assertion for tokens.", "Requires scope users:read"} {
		if !strings.Contains(text, want) {
			t.Errorf("API reference lacks %q", want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(outside) > 0 {
		t.Errorf("the API reference reached outside the server: %v", outside)
	}
}
