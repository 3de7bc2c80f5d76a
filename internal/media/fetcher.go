// Package media fetches the files an answer is graded with, only from the
// service's media CDN (spec 2.4, rules 4 and 5): any other URL, a redirect
// leaving the CDN, an oversized body or an unexpected content type is
// refused, so a student cannot make a worker fetch arbitrary URLs or feed
// the AI provider arbitrary data.
package media

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/observability/promreg"
)

// Errors callers test with errors.Is. They mean retrying will not help;
// any other error (network failure, timeout, 5xx) is transient.
var (
	ErrNotOnCDN         = errors.New("media: URL is not on the media CDN")
	ErrRedirectOffCDN   = errors.New("media: redirect leaves the media CDN")
	ErrTooManyRedirects = errors.New("media: too many redirects")
	ErrTooLarge         = errors.New("media: file too large")
	ErrUnsupportedType  = errors.New("media: unsupported content type")
	ErrNotFound         = errors.New("media: file not found") // the CDN answered 4xx other than 408/429, e.g. 404 or 403
)

// Defaults of Options.
const (
	DefaultMaxBytes = 20 << 20
	DefaultTimeout  = 15 * time.Second
	// MaxRedirects is how many redirects a fetch follows, each of which
	// must stay on the CDN.
	MaxRedirects = 3
)

// DefaultAllowedTypes are the media types providers accept as grading
// input.
var DefaultAllowedTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf", "text/plain"}

// Options tunes a Fetcher; zero values take the defaults.
type Options struct {
	MaxBytes     int64         // default DefaultMaxBytes (20 MiB)
	Timeout      time.Duration // per fetch, redirects included; default DefaultTimeout
	AllowedTypes []string      // media types without parameters; default DefaultAllowedTypes
	HTTPClient   *http.Client  // nil: a default client; its redirect policy is replaced
	// Registerer receives assessd_media_fetches_total{outcome}; nil means
	// no metrics. Several fetchers may share one registry.
	Registerer prometheus.Registerer
}

// Fetcher fetches grading files from the media CDN. It is safe for
// concurrent use.
type Fetcher struct {
	prefixes []prefix
	client   *http.Client
	maxBytes int64
	timeout  time.Duration
	allowed  []string
	accept   string
	fetches  *prometheus.CounterVec
}

// NewFetcher returns a fetcher for files under cdnPrefixes, the entries of
// ASSESSD_MEDIA_CDN such as "https://cdn.assessd.example/media/". Entries
// that are not absolute http(s) URLs are ignored, so a misconfiguration
// refuses files rather than allowing them.
func NewFetcher(cdnPrefixes []string, opts Options) *Fetcher {
	f := &Fetcher{
		maxBytes: orDefault(opts.MaxBytes, DefaultMaxBytes),
		timeout:  orDefault(opts.Timeout, DefaultTimeout),
		allowed:  DefaultAllowedTypes,
	}
	for _, raw := range cdnPrefixes {
		if p, ok := parsePrefix(strings.TrimSpace(raw)); ok {
			f.prefixes = append(f.prefixes, p)
		}
	}
	if len(opts.AllowedTypes) > 0 {
		f.allowed = nil
		for _, t := range opts.AllowedTypes {
			f.allowed = append(f.allowed, strings.ToLower(strings.TrimSpace(t)))
		}
	}
	f.accept = strings.Join(f.allowed, ", ")

	// A copy, so the caller's client keeps its own redirect policy.
	client := http.Client{}
	if opts.HTTPClient != nil {
		client = *opts.HTTPClient
	}
	client.CheckRedirect = f.checkRedirect
	f.client = &client

	f.fetches = promreg.Register(opts.Registerer, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "assessd_media_fetches_total",
		Help: "Grading file fetches from the media CDN by outcome.",
	}, []string{"outcome"}))
	return f
}

// orDefault returns v, or def when v is zero or negative.
func orDefault[T int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// OnCDN reports whether rawURL is an http(s) URL under one of the CDN
// prefixes.
func (f *Fetcher) OnCDN(rawURL string) bool {
	u, ok := parseStrict(rawURL)
	if !ok {
		return false
	}
	return slices.ContainsFunc(f.prefixes, func(p prefix) bool { return p.match(u) })
}

func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return ErrTooManyRedirects
	}
	if !f.OnCDN(req.URL.String()) {
		return ErrRedirectOffCDN
	}
	return nil
}

// MaxBytes is the size limit of a fetched file.
func (f *Fetcher) MaxBytes() int64 { return f.maxBytes }

// Fetch downloads rawURL from the CDN. The returned file carries rawURL
// and the media type without parameters.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (ai.File, error) {
	return f.FetchUpTo(ctx, rawURL, f.maxBytes)
}

// FetchUpTo is Fetch with a size limit of at most maxBytes, for a caller
// that budgets the bytes it holds; a file over it is ErrTooLarge.
func (f *Fetcher) FetchUpTo(ctx context.Context, rawURL string, maxBytes int64) (ai.File, error) {
	file, err := f.fetch(ctx, rawURL, min(maxBytes, f.maxBytes))
	f.fetches.WithLabelValues(outcome(err)).Inc()
	return file, err
}

func (f *Fetcher) fetch(ctx context.Context, rawURL string, maxBytes int64) (ai.File, error) {
	if !f.OnCDN(rawURL) {
		return ai.File{}, ErrNotOnCDN
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return ai.File{}, fmt.Errorf("media: %w", err)
	}
	req.Header.Set("Accept", f.accept)
	resp, err := f.client.Do(req)
	if err != nil {
		// Do wraps checkRedirect's sentinels in a *url.Error, which
		// unwraps to them; the URL it names is on the CDN already.
		return ai.File{}, fmt.Errorf("media: fetch: %w", err)
	}
	defer resp.Body.Close()

	if err := statusError(resp.StatusCode); err != nil {
		return ai.File{}, err
	}
	mediaType, err := f.mediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		return ai.File{}, err
	}
	if resp.ContentLength > maxBytes {
		return ai.File{}, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, resp.ContentLength, maxBytes)
	}
	// One byte past the limit tells an oversized body from one exactly
	// at it, without reading the rest.
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return ai.File{}, fmt.Errorf("media: read: %w", err)
	}
	if int64(len(data)) > maxBytes {
		return ai.File{}, fmt.Errorf("%w: over %d bytes", ErrTooLarge, maxBytes)
	}
	if err := checkSniffed(mediaType, data); err != nil {
		return ai.File{}, err
	}
	return ai.File{URL: rawURL, ContentType: mediaType, Data: data}, nil
}

// statusError maps the CDN's status: 4xx other than 408 and 429 means the
// file is not there for us (ErrNotFound); everything else that is not 2xx
// is transient.
func statusError(status int) error {
	switch {
	case status >= 200 && status < 300:
		return nil
	case status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests:
		return fmt.Errorf("%w: status %d", ErrNotFound, status)
	}
	return fmt.Errorf("media: status %d", status)
}

// mediaType returns the Content-Type header's media type, parameters
// stripped, if it is allowed.
func (f *Fetcher) mediaType(header string) (string, error) {
	mt, _, err := mime.ParseMediaType(header)
	if err != nil || !slices.Contains(f.allowed, mt) {
		return "", fmt.Errorf("%w: %q", ErrUnsupportedType, header)
	}
	return mt, nil
}

// checkSniffed refuses binary files whose bytes contradict their declared
// type (an HTML page served as image/png), which the provider would reject
// as a bad request after the whole upload. Text and types the sniffer
// does not know are taken at their word.
func checkSniffed(mediaType string, data []byte) error {
	switch mediaType {
	case "image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf":
		if sniffed, _, _ := mime.ParseMediaType(http.DetectContentType(data)); sniffed != mediaType {
			return fmt.Errorf("%w: declared %s, content is %s", ErrUnsupportedType, mediaType, sniffed)
		}
	}
	return nil
}

// outcome is the metrics label of a fetch result.
func outcome(err error) string {
	for _, o := range []struct {
		err   error
		label string
	}{
		{ErrNotOnCDN, "not_on_cdn"},
		{ErrRedirectOffCDN, "redirect_off_cdn"},
		{ErrTooManyRedirects, "too_many_redirects"},
		{ErrTooLarge, "too_large"},
		{ErrUnsupportedType, "unsupported_type"},
		{ErrNotFound, "not_found"},
	} {
		if errors.Is(err, o.err) {
			return o.label
		}
	}
	if err != nil {
		return "error"
	}
	return "ok"
}
