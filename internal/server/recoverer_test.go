package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/assessd/assessd/internal/platform/apihttp"
	"github.com/assessd/assessd/observability"
)

// lockedBuffer is a log sink the server's goroutines share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// panicRecords returns the panic and path of each "panic serving request"
// record written so far.
func (b *lockedBuffer) panicRecords(t *testing.T) [][2]string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out [][2]string
	dec := json.NewDecoder(bytes.NewReader(b.buf.Bytes()))
	for dec.More() {
		var rec struct{ Msg, Panic, Path string }
		if err := dec.Decode(&rec); err != nil {
			t.Fatal(err)
		}
		if rec.Msg == "panic serving request" {
			out = append(out, [2]string{rec.Panic, rec.Path})
		}
	}
	return out
}

// errorBody is the API error shape (google.rpc.Status with ErrorInfo).
type errorBody struct {
	Code    int
	Message string
	Details []errorDetail
}

type errorDetail struct {
	Type   string `json:"@type"`
	Reason string
	Domain string
}

// TestPanicsBecomeAPIErrors: a handler that panics answers a 500 in the
// API error shape without internal details, the panic is logged with its
// path, and the server keeps serving; http.ErrAbortHandler still aborts
// the response, silently, as net/http documents.
func TestPanicsBecomeAPIErrors(t *testing.T) {
	var logs lockedBuffer
	pages := http.NewServeMux()
	pages.HandleFunc("GET /boom/string", panics("kaboom"))
	pages.HandleFunc("GET /boom/error", panics(errors.New("assignment to entry in nil map")))
	pages.HandleFunc("GET /boom/abort", panics(http.ErrAbortHandler))
	pages.HandleFunc("GET /fine", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "fine") })
	srv := httptest.NewServer(New(Config{
		Logger:  slog.New(slog.NewJSONHandler(&logs, nil)),
		Metrics: observability.NewMetrics(),
		API:     http.NotFoundHandler(),
		Pages:   map[string]http.Handler{"/boom/": pages, "/fine": pages},
	}))
	defer srv.Close()

	internal := errorBody{Code: 13, Message: "internal error",
		Details: []errorDetail{{"type.googleapis.com/google.rpc.ErrorInfo", "INTERNAL", apihttp.ErrorDomain}}}

	var wantLogged [][2]string
	for _, tc := range []struct {
		path   string
		logged string // the panic value logged; "" for an aborted response
	}{
		{"/boom/string", "kaboom"},
		{"/boom/error", "assignment to entry in nil map"},
		{"/boom/abort", ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			res, err := srv.Client().Get(srv.URL + tc.path)
			if tc.logged == "" {
				if err == nil {
					res.Body.Close()
					t.Fatalf("an aborted handler answered %d", res.StatusCode)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				var got errorBody
				decodeErr := json.NewDecoder(res.Body).Decode(&got)
				res.Body.Close()
				if decodeErr != nil {
					t.Fatal(decodeErr)
				}
				if res.StatusCode != http.StatusInternalServerError || res.Header.Get("Content-Type") != "application/json" {
					t.Errorf("status %d, content type %q", res.StatusCode, res.Header.Get("Content-Type"))
				}
				if diff := cmp.Diff(internal, got); diff != "" {
					t.Errorf("error body (-want +got):\n%s", diff)
				}
				wantLogged = append(wantLogged, [2]string{tc.logged, tc.path})
			}
			if diff := cmp.Diff(wantLogged, logs.panicRecords(t)); diff != "" {
				t.Errorf("logged panics (-want +got):\n%s", diff)
			}
			// The server keeps serving.
			res, err = srv.Client().Get(srv.URL + "/fine")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK || string(body) != "fine" {
				t.Fatalf("after the panic: %d %q", res.StatusCode, body)
			}
		})
	}
}

// panics is a handler that panics with v, for the recoverer to catch.
func panics(v any) http.HandlerFunc {
	return func(http.ResponseWriter, *http.Request) {
		panic(v) //nolint:forbidigo // the panic the recoverer under test must catch
	}
}
