package api

import (
	"net/http/httptest"
	"testing"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/internal/platform/apihttp"
)

func TestRouteOfNamesRESTAndConnectRequests(t *testing.T) {
	routeOf := RouteOf()
	for _, c := range []struct{ method, path, want string }{
		{"GET", "/users/usr_1", "GET /users/{id}"},
		{"GET", "/exams/exm_1/results/summary", "GET /exams/{exam_id}/results/summary"},
		{"GET", "/question-types/discover", "GET /question-types/discover"},
		{"POST", "/assessd.v1.UserService/GetUser", "GET /users/{id}"},
		{"GET", "/nowhere", ""},
		{"GET", "/assessd.v1.UserService/GetUser", ""},
	} {
		if got := routeOf(httptest.NewRequest(c.method, c.path, nil)); got != c.want {
			t.Errorf("%s %s: route %q, want %q", c.method, c.path, got, c.want)
		}
	}
}

// TestRPCPackageIsTheServices: the middleware tells Connect and gRPC calls
// by the package apihttp names, which must be the services' own.
func TestRPCPackageIsTheServices(t *testing.T) {
	if got := string(v1.File_assessd_v1_users_proto.Package()); got != apihttp.RPCPackage {
		t.Errorf("the services are in %q, apihttp.RPCPackage is %q", got, apihttp.RPCPackage)
	}
}
