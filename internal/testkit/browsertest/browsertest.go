// Package browsertest runs headless Chromium (Debian's package, which
// make deps installs) for the browser-level tests, and saves their
// screenshots as artifacts.
package browsertest

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// NewChrome starts a headless Chromium for t, closed when t ends; it skips
// t when Chromium is not installed, and in -short mode.
func NewChrome(t testing.TB) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (apt-get install chromium)")
	}
	// Chromium may still write its profile while shutting down, so the
	// profile is removed best-effort rather than through t.TempDir.
	profile, err := os.MkdirTemp("", "assessd-chrome-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.UserDataDir(profile))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc(); _ = os.RemoveAll(profile) })
	return ctx
}

// SaveArtifact writes a screenshot or other artifact of t to
// $ARTIFACTS_DIR (a temporary directory when unset).
func SaveArtifact(t testing.TB, name string, data []byte) {
	dir := os.Getenv("ARTIFACTS_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(dir, name), data, 0o644)
	}
}

// axe is axe-core (pinned in tools/embedassets, copied by `make
// embed-assets`); only tests load it, never the served pages.
//
//go:embed axe.min.js
var axe string

// Widths are the viewport widths CheckPage renders at: desktop, a phone,
// and the narrowest iframe the pages must fit.
var Widths = []int64{1280, 360, 320}

// CheckPage opens url at each of Widths and fails t when axe-core reports
// any WCAG 2.1 A/AA violation or breach of its best practices (unique
// landmarks, one main, headings in order, ...) or the page scrolls
// sideways; it saves a screenshot name-<width>.png of each. The page is
// left open at 1280 px.
func CheckPage(t testing.TB, ctx context.Context, url, name string) {
	t.Helper()
	for _, width := range append(Widths[1:], Widths[0]) {
		var report struct {
			Violations []string
			Passes     int
		}
		var overflow bool
		var height int64
		var shot []byte
		err := chromedp.Run(ctx,
			chromedp.EmulateViewport(width, 900),
			chromedp.Navigate(url),
			chromedp.WaitReady(`body`, chromedp.ByQuery),
			chromedp.Evaluate(axe+";0", nil),
			chromedp.Evaluate(`axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]}})
				.then(r => ({passes: r.passes.length,
					violations: r.violations.map(v => v.id + " (" + v.help + "): " + v.nodes.map(n => n.target.join(" ")).join(", "))}))`,
				&report, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }),
			chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth`, &overflow),
			chromedp.Evaluate(`document.documentElement.scrollHeight`, &height),
		)
		// A viewport as tall as the page rather than FullScreenshot, which
		// clips right-to-left pages.
		if err == nil {
			err = chromedp.Run(ctx, chromedp.EmulateViewport(width, max(height, 600)), chromedp.CaptureScreenshot(&shot))
		}
		if err != nil {
			t.Fatalf("%s at %d px: %v", name, width, err)
		}
		SaveArtifact(t, fmt.Sprintf("%s-%d.png", name, width), shot)
		if report.Passes == 0 {
			t.Errorf("%s at %d px: axe-core checked nothing", name, width)
		}
		for _, v := range report.Violations {
			t.Errorf("%s at %d px: axe-core: %s", name, width, v)
		}
		if overflow {
			t.Errorf("%s at %d px scrolls sideways", name, width)
		}
	}
}

// cspBinding is the function WatchCSP's listener calls in every page.
const cspBinding = "assessdCSPViolation"

// WatchCSP records, from now on, every Content-Security-Policy violation
// the pages opened in ctx report (their securitypolicyviolation events,
// through a binding that survives navigations and that no policy of the
// page can block), and returns a function listing them as "directive:
// blocked (sample) at source:line".
func WatchCSP(t testing.TB, ctx context.Context) func() []string {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	chromedp.ListenTarget(ctx, func(ev any) {
		if b, ok := ev.(*runtime.EventBindingCalled); ok && b.Name == cspBinding {
			mu.Lock()
			seen = append(seen, b.Payload)
			mu.Unlock()
		}
	})
	listener := `addEventListener("securitypolicyviolation", e => ` + cspBinding + `(e.effectiveDirective + ": " + e.blockedURI +
		" (" + e.sample + ") at " + e.sourceFile + ":" + e.lineNumber), true)`
	err := chromedp.Run(ctx, runtime.AddBinding(cspBinding), chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(listener).Do(ctx)
		return err
	}))
	if err != nil {
		t.Fatalf("watching CSP violations: %v", err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}
