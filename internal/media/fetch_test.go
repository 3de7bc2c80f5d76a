package media_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/observability/promreg/promregtest"
)

const limit = 1024

var pngData = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 100)...)

// cdn is a TLS media CDN serving under /media/ plus a few paths outside
// it, and an unrelated TLS host that must never be reached.
type cdn struct {
	srv, other *httptest.Server
	otherHits  atomic.Int32
	loopHits   atomic.Int32
}

func newCDN(t *testing.T) *cdn {
	t.Helper()
	c := &cdn{}
	c.other = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.otherHits.Add(1)
		w.Header().Set("Content-Type", "image/png")
		w.Write(pngData)
	}))
	t.Cleanup(c.other.Close)

	mux := http.NewServeMux()
	serve := func(path, contentType string, body []byte) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", contentType)
			w.Write(body)
		})
	}
	redirect := func(path, to string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to, http.StatusFound) })
	}
	serve("/media/ok.png", "image/png", pngData)
	serve("/media/note.txt", "text/plain; charset=utf-8", []byte("hello"))
	serve("/media/exact.txt", "text/plain", bytes.Repeat([]byte("a"), limit))
	serve("/media/page.html", "text/html", []byte("<html></html>"))
	serve("/media/fake.png", "IMAGE/PNG", []byte("<html><body>not a png</body></html>"))
	serve("/private/secret.png", "image/png", pngData)
	redirect("/media/hop1", "/media/hop2")
	redirect("/media/hop2", "/media/ok.png")
	redirect("/media/outside", "/private/secret.png")
	redirect("/media/away", c.other.URL+"/media/ok.png")
	mux.HandleFunc("/media/loop", func(w http.ResponseWriter, r *http.Request) {
		c.loopHits.Add(1)
		http.Redirect(w, r, "/media/loop", http.StatusFound)
	})
	mux.HandleFunc("/media/big-declared", func(w http.ResponseWriter, r *http.Request) {
		// The declared length alone must refuse the file: the body is
		// cut short, so reading it would fail with another error.
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "5000")
		w.Write([]byte("short"))
	})
	mux.HandleFunc("/media/big-streamed", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.(http.Flusher).Flush() // no Content-Length: chunked
		w.Write(bytes.Repeat([]byte("a"), limit+1))
	})
	// The slow file never answers while the test runs: answering when the
	// client hangs up raced the client's deadline and sometimes reached it.
	release := make(chan struct{})
	mux.HandleFunc("/media/slow.png", func(w http.ResponseWriter, r *http.Request) { <-release })
	for path, status := range map[string]int{"/media/missing.png": 404, "/media/forbidden.png": 403, "/media/down.png": 503, "/media/busy.png": 429} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) })
	}
	c.srv = httptest.NewTLSServer(mux)
	t.Cleanup(c.srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: Close waits for handlers
	return c
}

func (c *cdn) fetcher(reg prometheus.Registerer) *media.Fetcher {
	return media.NewFetcher([]string{c.srv.URL + "/media/"}, media.Options{
		MaxBytes: limit, Timeout: 200 * time.Millisecond, HTTPClient: c.srv.Client(), Registerer: reg,
	})
}

func TestFetchOK(t *testing.T) {
	c := newCDN(t)
	f := c.fetcher(nil)
	for _, tc := range []struct {
		path string
		want ai.File
	}{
		{"/media/ok.png", ai.File{ContentType: "image/png", Data: pngData}},
		{"/media/note.txt", ai.File{ContentType: "text/plain", Data: []byte("hello")}},
		{"/media/exact.txt", ai.File{ContentType: "text/plain", Data: bytes.Repeat([]byte("a"), limit)}},
		{"/media/hop1", ai.File{ContentType: "image/png", Data: pngData}}, // two redirects on the CDN
	} {
		url := c.srv.URL + tc.path
		got, err := f.Fetch(context.Background(), url)
		if err != nil {
			t.Errorf("%s: %v", tc.path, err)
			continue
		}
		if got.URL != url || got.ContentType != tc.want.ContentType || !bytes.Equal(got.Data, tc.want.Data) {
			t.Errorf("%s: got %s %s %d bytes", tc.path, got.URL, got.ContentType, len(got.Data))
		}
	}
}

func TestFetchRefusals(t *testing.T) {
	c := newCDN(t)
	f := c.fetcher(nil)
	for _, tc := range []struct {
		url  string
		want error
	}{
		{c.other.URL + "/media/ok.png", media.ErrNotOnCDN},
		{c.srv.URL + "/private/secret.png", media.ErrNotOnCDN},
		{strings.Replace(c.srv.URL, "https:", "http:", 1) + "/media/ok.png", media.ErrNotOnCDN},
		{c.srv.URL + "/media/away", media.ErrRedirectOffCDN},
		{c.srv.URL + "/media/outside", media.ErrRedirectOffCDN},
		{c.srv.URL + "/media/loop", media.ErrTooManyRedirects},
		{c.srv.URL + "/media/big-declared", media.ErrTooLarge},
		{c.srv.URL + "/media/big-streamed", media.ErrTooLarge},
		{c.srv.URL + "/media/page.html", media.ErrUnsupportedType},
		{c.srv.URL + "/media/fake.png", media.ErrUnsupportedType},
		{c.srv.URL + "/media/missing.png", media.ErrNotFound},
		{c.srv.URL + "/media/forbidden.png", media.ErrNotFound},
	} {
		_, err := f.Fetch(context.Background(), tc.url)
		if !errors.Is(err, tc.want) {
			t.Errorf("Fetch(%s) = %v, want %v", tc.url, err, tc.want)
		}
	}
	if n := c.otherHits.Load(); n != 0 {
		t.Errorf("the off-CDN host was requested %d times", n)
	}
	if n := c.loopHits.Load(); n != 1+media.MaxRedirects {
		t.Errorf("redirect loop requested %d times, want %d", n, 1+media.MaxRedirects)
	}
}

// TestFetchTransientErrors checks that timeouts and server-side failures
// carry none of the permanent sentinels, so callers retry them.
func TestFetchTransientErrors(t *testing.T) {
	c := newCDN(t)
	f := c.fetcher(nil)
	permanent := []error{media.ErrNotOnCDN, media.ErrRedirectOffCDN, media.ErrTooManyRedirects, media.ErrTooLarge, media.ErrUnsupportedType, media.ErrNotFound}
	for _, path := range []string{"/media/slow.png", "/media/down.png", "/media/busy.png"} {
		start := time.Now()
		_, err := f.Fetch(context.Background(), c.srv.URL+path)
		if err == nil {
			t.Errorf("%s: no error", path)
			continue
		}
		for _, p := range permanent {
			if errors.Is(err, p) {
				t.Errorf("%s: %v is permanent (%v)", path, err, p)
			}
		}
		if path == "/media/slow.png" {
			if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
				t.Errorf("slow file: %v after %v, want a deadline after 200ms", err, time.Since(start))
			}
		}
	}
}

func TestFetchLeavesCallersClientAlone(t *testing.T) {
	client := &http.Client{}
	media.NewFetcher(nil, media.Options{HTTPClient: client})
	if client.CheckRedirect != nil {
		t.Error("NewFetcher changed the caller's client")
	}
}

func TestFetchMetrics(t *testing.T) {
	c := newCDN(t)
	reg := prometheus.NewRegistry()
	f, again := c.fetcher(reg), c.fetcher(reg) // one per regional worker, sharing the registry
	// The fetches' outcomes are what the counters below count.
	_, _ = f.Fetch(context.Background(), c.srv.URL+"/media/ok.png")
	_, _ = again.Fetch(context.Background(), c.srv.URL+"/media/ok.png")
	_, _ = f.Fetch(context.Background(), c.srv.URL+"/media/missing.png")
	_, _ = f.Fetch(context.Background(), "https://elsewhere.example/a.png")
	for outcome, want := range map[string]float64{"ok": 2, "not_found": 1, "not_on_cdn": 1} {
		if got := promregtest.Counter(t, reg, "assessd_media_fetches_total", map[string]string{"outcome": outcome}); got != want {
			t.Errorf("fetches{outcome=%q} = %v, want %v", outcome, got, want)
		}
	}
}
