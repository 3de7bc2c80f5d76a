package api

import (
	"context"
	"net/http"

	"connectrpc.com/connect"
	"connectrpc.com/vanguard"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/api/gen/assessd/v1/assessdv1connect"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/tenancy"
)

// Transport holds what NewTransport serves in place of the domain services.
type Transport struct {
	GetUser      func(ctx context.Context, id string) (tenancy.User, error)
	SubmitResult func(ctx context.Context, examID string, in assessment.NewResult) (assessment.Result, error)
}

// NewTransport serves GET /users/{id} and POST /exams/{examId}/results
// through the API's transport alone: Vanguard and Connect with the codecs,
// interceptors and options of NewHandler, the request and response
// conversions of the API, and t's functions in place of the domain
// services, without the server's middleware, authentication or tenant
// scope. cmd/benchhttp measures with it what the transport costs a
// request, apart from the product's work.
func NewTransport(t Transport) (http.Handler, error) {
	c := codecs{rest: newRESTJSON, connect: connectJSON{}}
	opts := handlerOptions(c)
	userPath, users := assessdv1connect.NewUserServiceHandler(transportUsers{get: t.GetUser}, opts...)
	resultPath, results := assessdv1connect.NewResultServiceHandler(transportResults{submit: t.SubmitResult}, opts...)
	return newTranscoder([]*vanguard.Service{
		vanguard.NewService(userPath, users, serviceOptions()...),
		vanguard.NewService(resultPath, results, serviceOptions()...),
	}, c)
}

type transportUsers struct {
	assessdv1connect.UnimplementedUserServiceHandler
	get func(ctx context.Context, id string) (tenancy.User, error)
}

func (s transportUsers) GetUser(ctx context.Context, req *connect.Request[v1.GetUserRequest]) (*connect.Response[v1.User], error) {
	u, err := s.get(ctx, req.Msg.Id)
	return reply(ctx, u, err, userToProto)
}

type transportResults struct {
	assessdv1connect.UnimplementedResultServiceHandler
	submit func(ctx context.Context, examID string, in assessment.NewResult) (assessment.Result, error)
}

func (s transportResults) SubmitResult(ctx context.Context, req *connect.Request[v1.SubmitResultRequest]) (*connect.Response[v1.Result], error) {
	r, err := s.submit(ctx, req.Msg.ExamId, newResultFrom(req.Msg))
	return reply(ctx, r, err, resultToProto)
}
