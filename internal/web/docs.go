package web

import (
	"net/http"

	redoc "github.com/mvrilo/go-redoc"
)

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

// Docs serves the API reference at /docs and its renderer script. Every
// asset comes from this binary: the page makes no request elsewhere.
func Docs() http.Handler {
	// Redoc's standalone bundle (MIT) comes with the pinned Go module
	// github.com/mvrilo/go-redoc: a plain go build serves it, no extra step.
	bundle := []byte(redoc.JavaScript)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /docs", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src blob:; frame-ancestors 'none'")
		_, _ = w.Write([]byte(docsPage))
	})
	mux.HandleFunc("GET /docs/redoc.standalone.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Header().Set("Cache-Control", "public, max-age=86400")
		_, _ = w.Write(bundle)
	})
	return mux
}
