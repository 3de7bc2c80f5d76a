package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

func TestOperationalEndpoints(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	e.Do("GET", "/users/"+tn.Users[tenancy.RoleStudent].ID, tn.Keys[tenancy.RoleOwner], nil).Must(t, http.StatusOK)
	e.Do("GET", "/users/"+tn.Users[tenancy.RoleStudent].ID, tn.Keys[tenancy.RoleStudent], nil).Must(t, http.StatusForbidden)

	if r := e.Do("GET", "/healthz", "", nil).Must(t, http.StatusOK); r.Body["status"] != "ok" {
		t.Fatalf("healthz: %s", r.Raw)
	}
	if r := e.Do("GET", "/readyz", "", nil).Must(t, http.StatusOK); r.Body["checks"].(map[string]any)["postgres"] != "ok" {
		t.Fatalf("readyz: %s", r.Raw)
	}
	if r := e.Do("GET", "/openapi.yaml", "", nil).Must(t, http.StatusOK); !strings.Contains(string(r.Raw), "/users/{id}:") {
		t.Fatal("openapi.yaml does not describe /users/{id}")
	}

	// Refused before the API runs, yet labelled with its route.
	e.Do("GET", "/users/"+tn.Users[tenancy.RoleStudent].ID, "", nil).Must(t, http.StatusUnauthorized)

	metrics := string(e.Do("GET", "/metrics", "", nil).Must(t, http.StatusOK).Raw)
	for _, want := range []string{
		`assessd_http_requests_total{method="GET",org="` + tn.Org.ID + `",route="GET /users/{id}",status="2xx"} 1`,
		`assessd_http_requests_total{method="GET",org="` + tn.Org.ID + `",route="GET /users/{id}",status="4xx"} 1`,
		`assessd_http_request_duration_seconds_count{method="GET",route="GET /users/{id}",status="2xx"} 1`,
		`assessd_http_requests_total{method="GET",org="_none",route="GET /users/{id}",status="4xx"} 1`,
		`assessd_org_info{ai_region="global",name="School US",org="` + tn.Org.ID + `",plan="pro"} 1`,
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
