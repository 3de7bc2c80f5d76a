package server

import (
	"bytes"
	"mime"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/assessd/assessd/api"
)

// statusCodes maps the HTTP statuses that routing answers with itself to
// the Connect code of the JSON error body.
var statusCodes = map[int]connect.Code{
	http.StatusNotFound:             connect.CodeNotFound,
	http.StatusMethodNotAllowed:     connect.CodeUnimplemented,
	http.StatusUnsupportedMediaType: connect.CodeInvalidArgument,
	http.StatusRequestURITooLong:    connect.CodeInvalidArgument,
}

// jsonErrors rewrites the plain-text errors that routing produces (405
// Method Not Allowed, 415, ...) into the API's google.rpc.Status JSON shape,
// so clients see one error format everywhere. Headers such as Allow are
// kept.
func jsonErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		jw := &jsonErrorWriter{ResponseWriter: w}
		next.ServeHTTP(jw, r)
		if jw.status == 0 {
			return
		}
		code, ok := statusCodes[jw.status]
		if !ok {
			code = connect.CodeUnknown
		}
		msg := strings.TrimSpace(jw.body.String())
		if msg == "" || len(msg) > 300 {
			msg = http.StatusText(jw.status)
		}
		reason := strings.ToUpper(strings.ReplaceAll(http.StatusText(jw.status), " ", "_"))
		w.Header().Del("Content-Length")
		api.WriteErrorStatus(w, jw.status, api.NewError(code, reason, msg, "", nil))
	})
}

type jsonErrorWriter struct {
	http.ResponseWriter
	status int // set when the response is being rewritten
	body   bytes.Buffer
	passed bool
}

func (w *jsonErrorWriter) WriteHeader(code int) {
	if !w.passed && w.status == 0 && code >= 400 && !structured(w.Header().Get("Content-Type")) {
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

func (w *jsonErrorWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && w.status == 0 {
		f.Flush()
	}
}

func (w *jsonErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// structured reports whether a response's content type already carries a
// machine-readable error (JSON, or an RPC protocol's encoding).
func structured(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return strings.HasSuffix(mt, "json") || strings.HasPrefix(mt, "application/grpc") ||
		strings.HasPrefix(mt, "application/connect") || mt == "application/proto"
}
