// Package api implements the Connect services of assessd and serves them
// as REST-style JSON (through Vanguard), Connect and gRPC. It translates
// between protobuf messages and domain types and maps domain errors to
// status codes; the rules live in the domain packages.
package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"connectrpc.com/connect"
	"connectrpc.com/vanguard"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/api/gen/assessd/v1/assessdv1connect"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/tenancy"
)

// MaxBodyBytes is the largest request body the API accepts (API.md: 413
// beyond 1 MiB).
const MaxBodyBytes = 1 << 20

// Services are the domain services the API exposes.
type Services struct {
	Tenancy *tenancy.Service
}

// NewHandler returns the API handler: every service on its REST paths and
// on its Connect/gRPC paths.
func NewHandler(s Services) (http.Handler, error) {
	routes := routeTemplates(v1.File_assessd_v1_users_proto.Package())
	opts := []connect.HandlerOption{
		connect.WithInterceptors(routeInterceptor(routes)),
		connect.WithReadMaxBytes(MaxBodyBytes),
	}
	svcOpts := []vanguard.ServiceOption{
		vanguard.WithRESTUnmarshalOptions(vanguard.RESTUnmarshalOptions{DiscardUnknownQueryParams: true}),
		// Always transcode REST JSON to protobuf, so every body passes the
		// strict codec (a JSON-to-JSON pass-through would skip it).
		vanguard.WithTargetCodecs(vanguard.CodecProto),
	}
	var services []*vanguard.Service
	for _, h := range []func() (string, http.Handler){
		func() (string, http.Handler) {
			return assessdv1connect.NewUserServiceHandler(userServer{s.Tenancy}, opts...)
		},
		func() (string, http.Handler) {
			return assessdv1connect.NewOrgServiceHandler(orgServer{s.Tenancy}, opts...)
		},
		func() (string, http.Handler) {
			return assessdv1connect.NewAuditLogServiceHandler(auditServer{s.Tenancy}, opts...)
		},
	} {
		path, handler := h()
		services = append(services, vanguard.NewService(path, handler, svcOpts...))
	}
	return vanguard.NewTranscoder(services,
		vanguard.WithCodec(newStrictJSON),
		vanguard.WithUnknownHandler(http.HandlerFunc(notFound)),
	)
}

func notFound(w http.ResponseWriter, r *http.Request) {
	WriteError(w, r, NewError(connect.CodeNotFound, "ROUTE_NOT_FOUND", fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path), "", nil))
}

// routeInterceptor records the route template of the procedure being
// served, for metrics and logs.
func routeInterceptor(routes map[string]string) connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			if route, ok := routes[req.Spec().Procedure]; ok {
				observability.Info(ctx).Route = route
			}
			return next(ctx, req)
		}
	}
}

// routeTemplates maps each procedure ("/assessd.v1.UserService/GetUser") to
// its REST route template ("GET /users/{id}"), read from the
// google.api.http rules of every file of the package.
func routeTemplates(pkg protoreflect.FullName) map[string]string {
	routes := map[string]string{}
	protoregistry.GlobalFiles.RangeFilesByPackage(pkg, func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			svc := f.Services().Get(i)
			for j := range svc.Methods().Len() {
				m := svc.Methods().Get(j)
				rule, ok := proto.GetExtension(m.Options(), annotations.E_Http).(*annotations.HttpRule)
				if !ok || rule == nil {
					continue
				}
				method, path := httpPattern(rule)
				routes["/"+string(svc.FullName())+"/"+string(m.Name())] = method + " " + path
			}
		}
		return true
	})
	return routes
}

func httpPattern(rule *annotations.HttpRule) (string, string) {
	switch p := rule.Pattern.(type) {
	case *annotations.HttpRule_Get:
		return http.MethodGet, p.Get
	case *annotations.HttpRule_Post:
		return http.MethodPost, p.Post
	case *annotations.HttpRule_Patch:
		return http.MethodPatch, p.Patch
	case *annotations.HttpRule_Put:
		return http.MethodPut, p.Put
	case *annotations.HttpRule_Delete:
		return http.MethodDelete, p.Delete
	case *annotations.HttpRule_Custom:
		return strings.ToUpper(p.Custom.Kind), p.Custom.Path
	}
	return "", ""
}
