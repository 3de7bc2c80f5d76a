package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/assessd/assessd/tenancy"
)

func TestOperationalEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	e.do("GET", "/users/"+tn.users[tenancy.RoleStudent].ID, tn.keys[tenancy.RoleOwner], nil).must(t, http.StatusOK)
	e.do("GET", "/users/"+tn.users[tenancy.RoleStudent].ID, tn.keys[tenancy.RoleStudent], nil).must(t, http.StatusForbidden)

	if r := e.do("GET", "/healthz", "", nil).must(t, http.StatusOK); r.body["status"] != "ok" {
		t.Fatalf("healthz: %s", r.raw)
	}
	if r := e.do("GET", "/readyz", "", nil).must(t, http.StatusOK); r.body["checks"].(map[string]any)["postgres"] != "ok" {
		t.Fatalf("readyz: %s", r.raw)
	}
	if r := e.do("GET", "/openapi.yaml", "", nil).must(t, http.StatusOK); !strings.Contains(string(r.raw), "/users/{id}:") {
		t.Fatal("openapi.yaml does not describe /users/{id}")
	}

	// Refused before the API runs, yet labelled with its route.
	e.do("GET", "/users/"+tn.users[tenancy.RoleStudent].ID, "", nil).must(t, http.StatusUnauthorized)

	metrics := string(e.do("GET", "/metrics", "", nil).must(t, http.StatusOK).raw)
	for _, want := range []string{
		`assessd_http_requests_total{method="GET",org="` + tn.org.ID + `",route="GET /users/{id}",status="2xx"} 1`,
		`assessd_http_requests_total{method="GET",org="` + tn.org.ID + `",route="GET /users/{id}",status="4xx"} 1`,
		`assessd_http_request_duration_seconds_count{method="GET",route="GET /users/{id}",status="2xx"} 1`,
		`assessd_http_requests_total{method="GET",org="_none",route="GET /users/{id}",status="4xx"} 1`,
		`assessd_org_info{ai_region="global",name="School US",org="` + tn.org.ID + `",plan="pro"} 1`,
		`assessd_auth_failures_total{reason="rate_limited"} 0`,
		`assessd_http_requests_total{method="GET",org="_none",route="GET /healthz",status="2xx"} 1`,
		`assessd_db_pool_total_connections`,
		`go_goroutines`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
