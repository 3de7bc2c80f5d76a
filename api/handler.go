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
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/classes"
	"github.com/assessd/assessd/internal/delivery"
	"github.com/assessd/assessd/internal/embedflow"
	"github.com/assessd/assessd/internal/generation"
	"github.com/assessd/assessd/internal/lti"
	"github.com/assessd/assessd/internal/platform/apihttp"
	"github.com/assessd/assessd/internal/regeneration"
	"github.com/assessd/assessd/internal/scanning"
	"github.com/assessd/assessd/internal/transfer"
	"github.com/assessd/assessd/internal/webhooks"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/tenancy"
)

// Services are the domain services the API exposes.
type Services struct {
	Tenancy *tenancy.Service
	// Assessment serves folders, exams, questions, question types and
	// results.
	Assessment *assessment.Service
	// Generation starts and reads AI exam generations.
	Generation *generation.Service
	// Regeneration starts, reads and accepts AI question regenerations.
	Regeneration *regeneration.Service
	// Embed creates embed sessions.
	Embed *embedflow.Service
	// AllowedClients manages the OAuth clients an organization allowed
	// extra scopes.
	AllowedClients AllowedClients
	// Scans prints answer sheets and reads scans of them.
	Scans *scanning.Service
	// Transfers export and import exams.
	Transfers *transfer.Service
	// Webhooks manages webhook endpoints and their deliveries.
	Webhooks *webhooks.Service
	// Delivery manages assignments, accommodations and attempts.
	Delivery *delivery.Service
	// Classes manages classes and their rosters.
	Classes *classes.Service
	// LTI registers the learning platforms that launch assessd.
	LTI *lti.Service
}

// NewHandler returns the API handler: every service on its REST paths and
// on its Connect/gRPC paths.
func NewHandler(s Services) (http.Handler, error) {
	return newHandler(s, codecs{rest: newRESTJSON, connect: connectJSON{}})
}

// codecs are the JSON codecs on either side of the transcoder: the REST
// clients' and the Connect handlers'.
type codecs struct {
	rest    func(vanguard.TypeResolver) vanguard.Codec
	connect connect.Codec
}

// newHandler is NewHandler with the given codecs and extra handler options
// (tests count decodes with them).
func newHandler(s Services, c codecs, extra ...connect.HandlerOption) (http.Handler, error) {
	opts := handlerOptions(c, extra...)
	var services []*vanguard.Service
	for _, h := range []func() (string, http.Handler){
		func() (string, http.Handler) {
			return assessdv1connect.NewUserServiceHandler(userServer{s.Tenancy}, opts...)
		},
		func() (string, http.Handler) {
			return assessdv1connect.NewOrgServiceHandler(orgServer{s.Tenancy}, opts...)
		},
		func() (string, http.Handler) {
			return assessdv1connect.NewAllowedClientServiceHandler(allowedClientServer{s.AllowedClients}, opts...)
		},
		func() (string, http.Handler) {
			return assessdv1connect.NewAuditLogServiceHandler(auditServer{s.Tenancy}, opts...)
		},
		func() (string, http.Handler) {
			return assessdv1connect.NewFolderServiceHandler(folderServer{s.Assessment}, opts...)
		},
		func() (string, http.Handler) {
			return assessdv1connect.NewExamServiceHandler(examServer{s.Assessment}, opts...)
		},
		func() (string, http.Handler) {
			return assessdv1connect.NewQuestionServiceHandler(questionServer{s.Assessment}, opts...)
		},
		func() (string, http.Handler) {
			return assessdv1connect.NewQuestionTypeServiceHandler(questionTypeServer{s.Assessment}, opts...)
		},
		func() (string, http.Handler) {
			return assessdv1connect.NewResultServiceHandler(resultServer{s.Assessment}, opts...)
		},
		func() (string, http.Handler) {
			return assessdv1connect.NewExamGenerationServiceHandler(generationServer{s.Generation}, opts...)
		},
		func() (string, http.Handler) {
			return assessdv1connect.NewEmbedServiceHandler(embedServer{s.Embed}, opts...)
		},
		func() (string, http.Handler) {
			return assessdv1connect.NewQuestionRegenerationServiceHandler(regenerationServer{s.Regeneration, s.Assessment}, opts...)
		},
		func() (string, http.Handler) {
			return assessdv1connect.NewAnswerSheetServiceHandler(answerSheetServer{s.Scans, s.Assessment}, opts...)
		},
		func() (string, http.Handler) {
			return assessdv1connect.NewExamExchangeServiceHandler(exchangeServer{s.Transfers}, opts...)
		},
		func() (string, http.Handler) {
			return assessdv1connect.NewWebhookEndpointServiceHandler(webhookServer{s.Webhooks}, opts...)
		},
		func() (string, http.Handler) {
			return assessdv1connect.NewAssignmentServiceHandler(assignmentServer{s.Delivery}, opts...)
		},
		func() (string, http.Handler) {
			return assessdv1connect.NewAttemptServiceHandler(attemptServer{s.Delivery}, opts...)
		},
		func() (string, http.Handler) {
			return assessdv1connect.NewClassServiceHandler(classServer{s.Classes}, opts...)
		},
		func() (string, http.Handler) {
			return assessdv1connect.NewLtiPlatformServiceHandler(ltiPlatformServer{s.LTI}, opts...)
		},
	} {
		path, handler := h()
		services = append(services, vanguard.NewService(path, handler, serviceOptions()...))
	}
	transcoder, err := newTranscoder(services, c)
	if err != nil {
		return nil, err
	}
	return checkURL(transcoder, apiRoutes()), nil
}

// handlerOptions are the Connect options of every service handler.
func handlerOptions(c codecs, extra ...connect.HandlerOption) []connect.HandlerOption {
	pkg := v1.File_assessd_v1_users_proto.Package()
	return append([]connect.HandlerOption{
		connect.WithInterceptors(routeInterceptor(routeTemplates(pkg)), textInterceptor()),
		connect.WithReadMaxBytes(apihttp.MaxBodyBytes),
		// Small responses are not worth compressing.
		connect.WithCompressMinBytes(4 << 10),
		connect.WithCodec(c.connect),
	}, extra...)
}

// serviceOptions are the transcoder's options for every service.
func serviceOptions() []vanguard.ServiceOption {
	return []vanguard.ServiceOption{
		vanguard.WithRESTUnmarshalOptions(vanguard.RESTUnmarshalOptions{DiscardUnknownQueryParams: true}),
		// JSON end to end: the transcoder passes handler responses through
		// instead of re-encoding them from protobuf.
		vanguard.WithTargetCodecs(vanguard.CodecJSON),
		// The hop from transcoder to handler is in-process: compressing it
		// only burns CPU.
		vanguard.WithNoTargetCompression(),
	}
}

func newTranscoder(services []*vanguard.Service, c codecs) (*vanguard.Transcoder, error) {
	return vanguard.NewTranscoder(services,
		vanguard.WithCodec(c.rest),
		vanguard.WithCodec(newProtoCodec),
		vanguard.WithCompression("gzip", newGzip, newBoundedGunzip),
		vanguard.WithUnknownHandler(http.HandlerFunc(notFound)),
	)
}

func notFound(w http.ResponseWriter, r *http.Request) {
	apihttp.WriteError(w, r, apihttp.NewError(connect.CodeNotFound, "ROUTE_NOT_FOUND", fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path), "", nil))
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
	forEachRule(pkg, func(m protoreflect.MethodDescriptor, rule *annotations.HttpRule) {
		method, path := HTTPPattern(rule)
		routes["/"+string(m.Parent().FullName())+"/"+string(m.Name())] = method + " " + path
	})
	return routes
}

// forEachRule calls fn for every method of pkg with a google.api.http rule.
func forEachRule(pkg protoreflect.FullName, fn func(protoreflect.MethodDescriptor, *annotations.HttpRule)) {
	protoregistry.GlobalFiles.RangeFilesByPackage(pkg, func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			methods := f.Services().Get(i).Methods()
			for j := range methods.Len() {
				if rule, ok := proto.GetExtension(methods.Get(j).Options(), annotations.E_Http).(*annotations.HttpRule); ok && rule != nil {
					fn(methods.Get(j), rule)
				}
			}
		}
		return true
	})
}

// HTTPPattern returns the HTTP method and path template of a
// google.api.http rule.
func HTTPPattern(rule *annotations.HttpRule) (string, string) {
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
