package web

import (
	"embed"
	"io/fs"
	"net/http"
)

// static holds the API reference renderer built by `make docs-assets`.
//
//go:embed all:static
var static embed.FS

const redocBundle = "static/redoc.standalone.js"

const docsPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>assessd API reference</title>
<style>body { margin: 0; }</style>
</head>
<body>
<redoc spec-url="/openapi.yaml" hide-download-button="false"></redoc>
<script src="/docs/redoc.standalone.js"></script>
</body>
</html>
`

const missingAssets = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>assessd API reference</title></head>
<body><h1>API reference</h1><p>The reference renderer was not built into this binary: run <code>make docs-assets</code>
and rebuild. The OpenAPI description itself is at <a href="/openapi.yaml">/openapi.yaml</a>.</p></body></html>
`

// Docs serves the API reference at /docs and its renderer script. Every
// asset comes from this binary: the page makes no request elsewhere.
func Docs() http.Handler {
	bundle, err := fs.ReadFile(static, redocBundle)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /docs", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src blob:; frame-ancestors 'none'")
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(missingAssets))
			return
		}
		_, _ = w.Write([]byte(docsPage))
	})
	mux.HandleFunc("GET /docs/redoc.standalone.js", func(w http.ResponseWriter, r *http.Request) {
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Header().Set("Cache-Control", "public, max-age=86400")
		_, _ = w.Write(bundle)
	})
	return mux
}
