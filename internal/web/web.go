// Package web holds the server-rendered pages' templates and styles,
// embedded in the binary. Pages work without JavaScript.
package web

import (
	"bytes"
	"embed"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
)

//go:embed templates/*.html
var files embed.FS

var pages = template.Must(template.ParseFS(files, "templates/*.html"))

// Render writes page name with data and status. Pages must not be framed
// (clickjacking) and are never cached.
func Render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	w.Header().Set("X-Frame-Options", "DENY")
	render(w, r, status, name, data, "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' *; frame-ancestors 'none'; base-uri 'none'")
}

// RenderFramed writes an embedded flow's page, which only frameAncestors
// (origins) may frame.
func RenderFramed(w http.ResponseWriter, r *http.Request, status int, name string, data any, frameAncestors []string) {
	ancestors := "'none'"
	if len(frameAncestors) > 0 {
		ancestors = strings.Join(frameAncestors, " ")
	}
	render(w, r, status, name, data, "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors "+ancestors)
}

func render(w http.ResponseWriter, r *http.Request, status int, name string, data any, csp string) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, data); err != nil {
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

//go:embed embed/devtools.js
var devtoolsJS []byte

// EmbedAssets serves the scripts of the embedded flows.
func EmbedAssets() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_, _ = w.Write(devtoolsJS)
	})
}
