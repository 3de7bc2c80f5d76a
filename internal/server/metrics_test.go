package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/observability/promreg/promregtest"
)

// Pages are labelled with the pattern of the mux that served them and with
// the organization they set; requests refused before the API with their
// API route; latency has no org label.
func TestRequestLabels(t *testing.T) {
	m := observability.NewMetrics()
	pages := http.NewServeMux()
	pages.HandleFunc("GET /embed/{id}", func(w http.ResponseWriter, r *http.Request) {
		observability.Info(r.Context()).OrgID = "org_a"
	})
	h := New(Config{
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		Metrics: m,
		API:     http.NotFoundHandler(),
		Pages:   map[string]http.Handler{"/embed/": pages, "/login": pages},
		Route:   usersRoute,
	})
	for _, req := range []*http.Request{
		httptest.NewRequest("GET", "/embed/emb_1", nil),
		httptest.NewRequest("POST", "/login", nil),
		httptest.NewRequest("GET", "/users/usr_1", nil),
		httptest.NewRequest("GET", "/nowhere", nil),
	} {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	for _, c := range []map[string]string{
		{"org": "org_a", "route": "GET /embed/{id}", "method": "GET", "status": "2xx"},
		{"org": "_none", "route": "POST /login", "method": "POST", "status": "4xx"},
		{"org": "_none", "route": "GET /users/{id}", "method": "GET", "status": "4xx"},
		{"org": "_none", "route": "unmatched", "method": "GET", "status": "4xx"},
	} {
		if got := promregtest.Counter(t, m.Registry, "assessd_http_requests_total", c); got != 1 {
			t.Errorf("requests%v = %v, want 1", c, got)
		}
	}
	promregtest.Find(t, m.Registry, "assessd_http_request_duration_seconds",
		map[string]string{"route": "GET /embed/{id}", "method": "GET", "status": "2xx"})
	for _, reason := range observability.AuthFailureReasons {
		promregtest.Find(t, m.Registry, "assessd_auth_failures_total", map[string]string{"reason": reason})
	}
}

// TestInventedMethodsShareALabel: net/http takes any token as a method;
// each would be a metric series kept for the process's life.
func TestInventedMethodsShareALabel(t *testing.T) {
	m := observability.NewMetrics()
	pages := http.NewServeMux()
	pages.HandleFunc("GET /embed/{id}", func(http.ResponseWriter, *http.Request) {})
	h := New(Config{
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		Metrics: m,
		API:     http.NotFoundHandler(),
		Pages:   map[string]http.Handler{"/embed/": pages, "/oauth/": pages},
		Route:   usersRoute,
	})
	invented := []string{"BREW", "FOO123", strings.Repeat("X", 4096)}
	for _, method := range invented {
		for _, path := range []string{"/oauth/token", "/embed/emb_1", "/users/usr_1", "/nowhere"} {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(method, path, nil))
		}
	}
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	others := 0.0
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				for _, method := range invented {
					if strings.Contains(l.GetValue(), method) {
						t.Fatalf("%s has the label %s=%.40q", f.GetName(), l.GetName(), l.GetValue())
					}
				}
				if f.GetName() == "assessd_http_requests_total" && l.GetName() == "method" && l.GetValue() == "_OTHER" {
					others += metric.GetCounter().GetValue()
				}
			}
		}
	}
	if want := float64(len(invented) * 4); others != want {
		t.Fatalf("%v requests labelled method=_OTHER, want %v", others, want)
	}
}

// usersRoute stands for the API's route templates: GET /users/{id} is
// its one route.
func usersRoute(r *http.Request) string {
	if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/users/") {
		return "GET /users/{id}"
	}
	return ""
}

func TestRouteLabel(t *testing.T) {
	for _, c := range []struct{ method, pattern, want string }{
		{"GET", "GET /embed/{id}", "GET /embed/{id}"},
		{"POST", "/oauth/", "POST /oauth/"},
		{"BREW", "/oauth/", "_OTHER /oauth/"},
	} {
		if got := RouteLabel(c.method, c.pattern); got != c.want {
			t.Errorf("RouteLabel(%q, %q) = %q, want %q", c.method, c.pattern, got, c.want)
		}
	}
}
