// Package browsertest runs headless Chromium (Debian's package, which
// .ci/run installs) for the browser-level tests, and saves their
// screenshots as artifacts.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// NewChrome starts a headless Chromium for t, closed when t ends; it skips
// t when Chromium is not installed.
func NewChrome(t testing.TB) context.Context {
	t.Helper()
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
