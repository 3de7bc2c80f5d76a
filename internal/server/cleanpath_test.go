package server

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/assessd/assessd/observability"
)

// TestUncleanPathsAreNotFound: a path with an empty segment (an empty id)
// or a dot segment is the API's 404, not ServeMux's redirect to another
// resource; clean paths, with or without a trailing slash, still route
// (the API's to authentication).
func TestUncleanPathsAreNotFound(t *testing.T) {
	pages := http.NewServeMux()
	pages.HandleFunc("GET /embed/", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "page") })
	srv := httptest.NewServer(New(Config{
		Logger:  slog.New(slog.DiscardHandler),
		Metrics: observability.NewMetrics(),
		API:     http.NotFoundHandler(),
		Pages:   map[string]http.Handler{"/embed/": pages},
	}))
	defer srv.Close()
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, tc := range []struct {
		path, want string
		code       int
	}{
		{"/exams//questions", "", http.StatusNotFound},
		{"/exams/exm_1/./questions", "", http.StatusNotFound},
		{"/exams/exm_1/../x", "", http.StatusNotFound},
		{"/exams/exm_1/questions", "UNAUTHENTICATED", http.StatusUnauthorized},
		{"/embed/", "page", http.StatusOK},
		{"/embed/abc", "page", http.StatusOK},
	} {
		res, err := client.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.code {
			t.Errorf("GET %s = %d %s, want %d", tc.path, res.StatusCode, body, tc.code)
			continue
		}
		if tc.want != "" {
			if !strings.Contains(string(body), tc.want) {
				t.Errorf("GET %s answered %q, want %q in it", tc.path, body, tc.want)
			}
			continue
		}
		var e errorBody
		if err := json.Unmarshal(body, &e); err != nil || e.Code != 5 || len(e.Details) != 1 || e.Details[0].Reason != "NOT_FOUND" {
			t.Errorf("GET %s body %s, want the API's NOT_FOUND error", tc.path, body)
		}
	}
}
