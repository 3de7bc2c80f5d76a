package server

import (
	"bytes"
	"mime"
	"net/http"
	"strings"

	"github.com/assessd/assessd/internal/platform/apihttp"
)

// jsonErrors gives every error of the REST surface the API's
// google.rpc.Status shape: it holds back error responses and lets
// apihttp.ShapeError rewrite those that lack it (plain-text routing errors
// such as 405 and 415, and the transcoder's errors for undecodable path and
// query values, whose fields fieldOf names). Connect and gRPC calls keep
// their protocol's errors. Headers such as Allow are kept.
func jsonErrors(fieldOf apihttp.FieldOf, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if apihttp.IsRPC(r) {
			next.ServeHTTP(w, r)
			return
		}
		method, path := r.Method, r.URL.Path
		jw := &jsonErrorWriter{ResponseWriter: w}
		next.ServeHTTP(jw, r)
		if jw.status == 0 {
			return
		}
		ce := apihttp.ShapeError(r.Context(), fieldOf, method, path, jw.status, w.Header().Get("Content-Type"), jw.body.Bytes())
		if ce == nil {
			w.WriteHeader(jw.status)
			_, _ = w.Write(jw.body.Bytes())
			return
		}
		// The new body is plain JSON, whatever the held-back one declared.
		w.Header().Del("Content-Length")
		w.Header().Del("Content-Encoding")
		apihttp.WriteErrorStatus(w, jw.status, ce)
	})
}

// jsonErrorWriter holds back an error response (status and body) for
// jsonErrors to inspect; other responses pass straight through.
type jsonErrorWriter struct {
	http.ResponseWriter
	status int // set when the response is held back
	body   bytes.Buffer
	passed bool
}

func (w *jsonErrorWriter) WriteHeader(code int) {
	if !w.passed && w.status == 0 && code >= 400 && restOrPlain(w.Header().Get("Content-Type")) {
		w.status = code
		return
	}
	w.passed = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *jsonErrorWriter) Write(b []byte) (int, error) {
	if w.status != 0 {
		return w.body.Write(b)
	}
	w.passed = true
	return w.ResponseWriter.Write(b)
}

// Flush does nothing: REST responses are unary, and the transcoder's
// flush at the end of each one would make net/http send it chunked in two
// writes; unflushed, a small response goes out in one write with its
// Content-Length when the handler returns.
func (w *jsonErrorWriter) Flush() {}

func (w *jsonErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// restOrPlain reports whether an error response is JSON or plain text,
// the two forms the REST surface can produce; RPC encodings pass through.
func restOrPlain(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return !strings.HasPrefix(mt, "application/grpc") && !strings.HasPrefix(mt, "application/connect") && mt != "application/proto"
}
