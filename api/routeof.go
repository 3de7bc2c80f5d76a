package api

import (
	"net/http"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
)

// RouteOf returns the route template ("GET /users/{id}") of an API request
// from its method and path alone, REST or Connect/gRPC, or "" when no
// route matches. It serves requests refused before the API handler ran
// (unauthenticated, over the size limit), which still deserve their
// route in metrics and logs.
func RouteOf() func(*http.Request) string {
	mux := http.NewServeMux()
	nop := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	templates := map[string]string{}
	for procedure, route := range routeTemplates(v1.File_assessd_v1_users_proto.Package()) {
		mux.Handle(route, nop)
		// Connect and gRPC calls are POSTs to the procedure's path.
		mux.Handle("POST "+procedure, nop)
		templates["POST "+procedure] = route
	}
	return func(r *http.Request) string {
		_, pattern := mux.Handler(r)
		if route, ok := templates[pattern]; ok {
			return route
		}
		return pattern
	}
}
