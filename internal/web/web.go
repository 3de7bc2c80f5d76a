// Package web holds the server-rendered pages' templates and styles,
// embedded in the binary. Pages work without JavaScript.
package web

import (
	"bytes"
	"crypto/rand"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

//go:embed templates/*.html
var files embed.FS

// framed is never executed: each framed page runs on a clone (pagePool)
// answering the request's CSP nonce (a template cannot be cloned once
// executed).
var framed = template.Must(template.New("").Funcs(template.FuncMap{"nonce": func() string { return "" }, "partial": func() bool { return false }, "dict": dict, "add": add}).ParseFS(files, "templates/*.html"))

// dict passes several values to a nested template: dict "K" v "L" w.
func dict(kv ...any) map[string]any {
	m := make(map[string]any, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		k, _ := kv[i].(string)
		m[k] = kv[i+1]
	}
	return m
}

func add(a, b int) int { return a + b }

var pages = template.Must(framed.Clone())

// Render writes page name with data and status. Pages must not be framed
// (clickjacking) and are never cached.
func Render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	w.Header().Set("X-Frame-Options", "DENY")
	render(w, r, pages, status, name, data, "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' *; frame-ancestors 'none'; base-uri 'none'")
}

// RenderFramed writes an embedded flow's page, which only frameAncestors
// (origins) may frame. Its scripts and its one style element (the theme)
// run only with the response's nonce: no inline script or style attribute.
// An htmx request (HX-Request) is answered the page without its head and
// foot (partial in the templates): htmx parses a whole document it is sent,
// head included, and the head's style element, whose nonce is the
// answer's and not the page's, is a violation of the page's policy
// (decision 0188).
func RenderFramed(w http.ResponseWriter, r *http.Request, status int, name string, data any, frameAncestors []string) {
	renderFramed(w, r, status, name, data, frameAncestors, "'self'")
}

// RenderFramedPostingTo is RenderFramed for a page whose form posts to
// another origin, that of target (an LTI deep-linking response posted
// back to the platform): the page's form-action allows it besides the
// page's own.
func RenderFramedPostingTo(w http.ResponseWriter, r *http.Request, status int, name string, data any, frameAncestors []string, target string) {
	formAction := "'self'"
	if u, err := url.Parse(target); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
		formAction += " " + u.Scheme + "://" + u.Host
	}
	renderFramed(w, r, status, name, data, frameAncestors, formAction)
}

// framedPage is a clone of framed whose nonce and partial functions answer
// its fields: one request's at a time.
type framedPage struct {
	t       *template.Template
	nonce   string
	partial bool
}

// pagePool keeps framed pages for reuse: cloning the templates costs more
// than rendering a page (half the CPU of an LTI launch, measured by
// cmd/benchlti), so a clone serves request after request.
type pagePool struct{ sync.Pool }

var framedPages pagePool

// get returns a free clone of framed, made if there is none.
func (p *pagePool) get() (*framedPage, error) {
	if page, ok := p.Get().(*framedPage); ok {
		return page, nil
	}
	page := &framedPage{}
	t, err := framed.Clone()
	if err != nil {
		return nil, err
	}
	page.t = t.Funcs(template.FuncMap{"nonce": func() string { return page.nonce }, "partial": func() bool { return page.partial }})
	return page, nil
}

func renderFramed(w http.ResponseWriter, r *http.Request, status int, name string, data any, frameAncestors []string, formAction string) {
	ancestors := "'none'"
	if len(frameAncestors) > 0 {
		ancestors = strings.Join(frameAncestors, " ")
	}
	page, err := framedPages.get()
	if err != nil {
		slog.ErrorContext(r.Context(), "clone page templates", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	defer framedPages.Put(page)
	nonce := rand.Text()
	page.nonce, page.partial = nonce, r.Header.Get("HX-Request") == "true"
	t := page.t
	src := "'self' 'nonce-" + nonce + "'"
	render(w, r, t, status, name, data, "default-src 'none'; script-src "+src+"; style-src "+src+"; img-src 'self' data:; connect-src 'self'; form-action "+formAction+"; base-uri 'none'; frame-ancestors "+ancestors)
}

func render(w http.ResponseWriter, r *http.Request, t *template.Template, status int, name string, data any, csp string) {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		slog.ErrorContext(r.Context(), "render page", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", csp)
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// htmx.min.js is htmx.org (pinned in tools/embedassets, copied by
// `make embed-assets`); the rest is ours.
//
//go:embed embed
var embedAssets embed.FS

// EmbedAssetNames are the files EmbedAssets serves under /embed/assets/.
var EmbedAssetNames = []string{"devtools.js", "embed.css", "embed.js", "htmx.min.js", "lti.js"}

// EmbedAssets serves the scripts and stylesheet of the embedded flows from
// the binary: the pages load nothing from elsewhere.
func EmbedAssets() http.Handler {
	sub, _ := fs.Sub(embedAssets, "embed") // fails only for an invalid literal path
	files := http.StripPrefix("/embed/assets/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	})
}
