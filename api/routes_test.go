package api

import (
	"net/http/httptest"
	"testing"
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
