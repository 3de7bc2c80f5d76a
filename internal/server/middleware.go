package server

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/assessd/assessd/internal/platform/apihttp"
	"github.com/assessd/assessd/internal/platform/clientaddr"
	"github.com/assessd/assessd/observability"
)

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// withRequestInfo gives every request an id (the client's X-Request-Id when
// it is sane) and the info record the inner layers fill in.
func withRequestInfo(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !requestIDPattern.MatchString(id) {
			var b [12]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", id)
		info := &observability.RequestInfo{ID: id}
		next.ServeHTTP(w, r.WithContext(observability.WithRequestInfo(r.Context(), info)))
	})
}

// recoverer turns a panic into a logged 500 instead of a dropped connection.
func recoverer(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					// net/http's protocol: re-panicking ErrAbortHandler
					// aborts the response without a logged stack.
					panic(v) //nolint:forbidigo // see above
				}
				log.ErrorContext(r.Context(), "panic serving request", "panic", fmt.Sprint(v), "path", r.URL.Path)
				apihttp.WriteError(w, r, apihttp.NewError(connect.CodeInternal, "INTERNAL", "internal error", "", nil))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// statusRecorder remembers the status and size of a response.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += n
	return n, err
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// instrument logs each request and records its metrics, labelled by
// organization, route template, method and status class (latency without
// the organization). routeOf names requests no handler named.
func instrument(log *slog.Logger, m *observability.Metrics, routeOf func(*http.Request) string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		elapsed := time.Since(start)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		info := observability.Info(r.Context())
		route := info.Route
		if route == "" && routeOf != nil {
			route = routeOf(r)
		}
		if route == "" {
			route = "unmatched"
		}
		status := statusClass(rec.status)
		method := methodLabel(r.Method)
		m.HTTPRequests.WithLabelValues(m.Org(info.OrgID), route, method, status).Inc()
		m.HTTPDuration.WithLabelValues(route, method, status).Observe(elapsed.Seconds())
		level := slog.LevelInfo
		if route == "GET /metrics" || route == "GET /healthz" || route == "GET /readyz" {
			level = slog.LevelDebug
		}
		// LogAttrs: typed attributes, not a boxed argument list per request.
		log.LogAttrs(r.Context(), level, "request",
			slog.String("method", r.Method), slog.String("route", route), slog.String("path", r.URL.Path),
			slog.String("client", clientaddr.From(r)), slog.Int("status", rec.status),
			slog.Int("bytes", rec.bytes), slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000))
	})
}

// methodLabel is a request's method as a label: one of the methods HTTP
// defines, or "_OTHER" (OpenTelemetry's name for the rest). net/http takes
// any token as a method, up to a megabyte long, and each label value is a
// series every scrape exports for the life of the process.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return "_OTHER"
}

var statusClasses = [...]string{"0xx", "1xx", "2xx", "3xx", "4xx", "5xx"}

// statusClass is the status label ("2xx"), without building a string per
// request.
func statusClass(code int) string {
	if c := code / 100; c >= 0 && c < len(statusClasses) {
		return statusClasses[c]
	}
	return strconv.Itoa(code/100) + "xx"
}

// limitPageBody bounds a page's request body by apihttp.MaxBodyBytes. A form
// is read by its handler (net/http's own bound on a form is 10 MiB, and a
// multipart form's files beyond 32 MiB go to disk without any bound); a
// body declared larger gets 413 before it is read, and one that turns out
// larger fails its handler's read, which answers 400.
func limitPageBody(next http.Handler) http.Handler {
	return boundPageBody(next, func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "the request body is larger than 1 MiB", http.StatusRequestEntityTooLarge)
	})
}

// limitFormEndpointBody bounds a form endpoint's request body as
// limitPageBody does, but hands a body declared larger to next unread,
// failing as one found larger fails at the bound: next answers both in
// its own error shape.
func limitFormEndpointBody(next http.Handler) http.Handler {
	return boundPageBody(next, func(w http.ResponseWriter, r *http.Request) {
		r.Body = oversizedBody{r.Body}
		next.ServeHTTP(w, r)
	})
}

// boundPageBody bounds r's body by apihttp.MaxBodyBytes for next, and leaves a
// body declared larger to declared.
func boundPageBody(next http.Handler, declared http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > apihttp.MaxBodyBytes {
			declared(w, r)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, apihttp.MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

// oversizedBody is a body declared larger than apihttp.MaxBodyBytes, left
// unread: its first read fails as http.MaxBytesReader's does at the bound.
type oversizedBody struct{ io.ReadCloser }

func (oversizedBody) Read([]byte) (int, error) {
	return 0, &http.MaxBytesError{Limit: apihttp.MaxBodyBytes}
}

// limitBody reads the body up front, the one read of it, bounded by
// apihttp.MaxBodyBytes: larger bodies get 413, and a body on a request that
// takes none gets 400, both in the API's error shape (the transcoder would
// report them as 500s). An empty REST body becomes an empty object, so
// whichever side of the transcoder decodes it, the domain names the
// missing fields.
func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > apihttp.MaxBodyBytes {
			tooLarge(w, r)
			return
		}
		var body []byte
		if r.Body != nil && r.Body != http.NoBody {
			var err error
			body, err = io.ReadAll(io.LimitReader(r.Body, apihttp.MaxBodyBytes+1))
			if err != nil {
				apihttp.WriteError(w, r, apihttp.NewError(connect.CodeInvalidArgument, "INVALID_BODY", "could not read the request body", "", nil))
				return
			}
			if len(body) > apihttp.MaxBodyBytes {
				tooLarge(w, r)
				return
			}
			if len(body) > 0 && (r.Method == http.MethodGet || r.Method == http.MethodDelete) {
				apihttp.WriteError(w, r, apihttp.NewError(connect.CodeInvalidArgument, "UNEXPECTED_BODY", r.Method+" requests take no body", "", nil))
				return
			}
			if len(body) > 0 && !jsonOrRPC(r) {
				apihttp.WriteErrorStatus(w, http.StatusUnsupportedMediaType, apihttp.NewError(connect.CodeInvalidArgument, "UNSUPPORTED_MEDIA_TYPE",
					"request bodies must be JSON: send Content-Type: application/json", "", nil))
				return
			}
			var ok bool
			if body, ok = inflate(w, r, body); !ok {
				return
			}
		}
		if takesBody(r.Method) && !apihttp.IsRPC(r) && len(bytes.TrimSpace(body)) == 0 {
			body = []byte("{}")
			r.Header.Set("Content-Type", "application/json")
		}
		if body != nil {
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		}
		next.ServeHTTP(w, r)
	})
}

// inflate decodes a body sent with Content-Encoding: gzip under the bound
// of any body (413 beyond it), so that the transcoder, which would inflate
// it without one, gets it plain: a megabyte of gzip can hold a gigabyte of
// JSON. It answers w itself when it cannot.
func inflate(w http.ResponseWriter, r *http.Request, body []byte) ([]byte, bool) {
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); {
	case enc == "" || enc == "identity" || len(body) == 0:
		r.Header.Del("Content-Encoding")
		return body, true
	case enc != "gzip":
		apihttp.WriteErrorStatus(w, http.StatusUnsupportedMediaType, apihttp.NewError(connect.CodeInvalidArgument, "UNSUPPORTED_MEDIA_TYPE",
			fmt.Sprintf("Content-Encoding %q is not supported: send the body as is or with gzip", enc), "", nil))
		return nil, false
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err == nil {
		body, err = io.ReadAll(io.LimitReader(zr, apihttp.MaxBodyBytes+1))
	}
	if err != nil {
		apihttp.WriteError(w, r, apihttp.NewError(connect.CodeInvalidArgument, "INVALID_BODY", "the body is not valid gzip", "", nil))
		return nil, false
	}
	if len(body) > apihttp.MaxBodyBytes {
		tooLarge(w, r)
		return nil, false
	}
	r.Header.Del("Content-Encoding")
	return body, true
}

func takesBody(method string) bool {
	return method == http.MethodPost || method == http.MethodPatch || method == http.MethodPut
}

// jsonOrRPC reports whether the body is JSON or an RPC protocol's
// encoding; a body without Content-Type is taken to be JSON.
func jsonOrRPC(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		r.Header.Set("Content-Type", "application/json")
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || mt == "application/proto" ||
		strings.HasPrefix(mt, "application/connect+") || strings.HasPrefix(mt, "application/grpc"))
}

func tooLarge(w http.ResponseWriter, r *http.Request) {
	apihttp.WriteErrorStatus(w, http.StatusRequestEntityTooLarge, apihttp.NewError(connect.CodeResourceExhausted, "BODY_TOO_LARGE",
		fmt.Sprintf("request body exceeds %d bytes", apihttp.MaxBodyBytes), "", nil))
}
