package api

import (
	"context"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/emptypb"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/api/gen/assessd/v1/assessdv1connect"
	"github.com/assessd/assessd/internal/platform/apihttp"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/tenancy"
)

type userServer struct{ svc *tenancy.Service }

var _ assessdv1connect.UserServiceHandler = userServer{}

func (s userServer) GetMe(ctx context.Context, _ *connect.Request[v1.GetMeRequest]) (*connect.Response[v1.User], error) {
	u, err := s.svc.Me(ctx)
	return reply(ctx, u, err, userToProto)
}

func (s userServer) UpdateMe(ctx context.Context, req *connect.Request[v1.UpdateMeRequest]) (*connect.Response[v1.User], error) {
	u, err := s.svc.UpdateMe(ctx, req.Msg.Name)
	return reply(ctx, u, err, userToProto)
}

func (s userServer) ListUsers(ctx context.Context, req *connect.Request[v1.ListUsersRequest]) (*connect.Response[v1.ListUsersResponse], error) {
	p, err := paging.Parse(req.Msg.PageSize, req.Msg.PageToken)
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	users, next, err := s.svc.ListUsers(ctx, tenancy.UserFilter{Role: tenancy.Role(req.Msg.Role), Email: req.Msg.Email}, p)
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	out := &v1.ListUsersResponse{Users: make([]*v1.User, len(users)), NextPageToken: next}
	for i, u := range users {
		out.Users[i] = userToProto(u)
	}
	return connect.NewResponse(out), nil
}

func (s userServer) CreateUser(ctx context.Context, req *connect.Request[v1.CreateUserRequest]) (*connect.Response[v1.User], error) {
	m := req.Msg
	u, err := s.svc.CreateUser(ctx, tenancy.NewUser{
		Email: m.Email, Name: m.Name, Role: tenancy.Role(m.Role), Password: m.GetPassword(),
		Metadata: fromStruct(m.Metadata),
	})
	return reply(ctx, u, err, userToProto)
}

func (s userServer) GetUser(ctx context.Context, req *connect.Request[v1.GetUserRequest]) (*connect.Response[v1.User], error) {
	u, err := s.svc.User(ctx, req.Msg.Id)
	return reply(ctx, u, err, userToProto)
}

func (s userServer) UpdateUser(ctx context.Context, req *connect.Request[v1.UpdateUserRequest]) (*connect.Response[v1.User], error) {
	m := req.Msg
	p := tenancy.UserPatch{Name: m.Name, Email: m.Email, Metadata: fromStruct(m.Metadata)}
	if m.Role != nil {
		r := tenancy.Role(*m.Role)
		p.Role = &r
	}
	u, err := s.svc.UpdateUser(ctx, m.Id, p)
	return reply(ctx, u, err, userToProto)
}

func (s userServer) DeleteUser(ctx context.Context, req *connect.Request[v1.DeleteUserRequest]) (*connect.Response[emptypb.Empty], error) {
	if err := s.svc.DeleteUser(ctx, req.Msg.Id); err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	return connect.NewResponse(&emptypb.Empty{}), nil
}

// reply converts a domain result to a response, or maps its error.
func reply[T any, P any](ctx context.Context, v T, err error, conv func(T) *P) (*connect.Response[P], error) {
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	return connect.NewResponse(conv(v)), nil
}
