// Package apihttp holds the API's HTTP conventions that the handlers
// (package api), the middleware in front of them (internal/server) and
// internal/idempotency share: the google.rpc.Status error envelope of
// API.md (NewError, ToConnect, WriteError, ShapeError), the request body
// bound and which requests are Connect or gRPC calls. It imports nothing of
// ours above internal/platform, so that middleware answers in the API's
// shape without importing the handlers and every domain behind them.
package apihttp

import (
	"net/http"
	"strings"
)

// MaxBodyBytes is the largest request body the API accepts (API.md: 413
// beyond 1 MiB).
const MaxBodyBytes = 1 << 20

// RPCPackage is the protobuf package of the API's services: Connect and
// gRPC calls are POSTs to "/assessd.v1.<Service>/<Method>". Package api
// checks it against the generated descriptors.
const RPCPackage = "assessd.v1"

// IsRPC reports whether r is a Connect or gRPC call (their errors have
// their own protocol's shape), rather than a REST request.
func IsRPC(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, "/"+RPCPackage+".")
}
