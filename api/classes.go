package api

import (
	"context"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/emptypb"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/api/gen/assessd/v1/assessdv1connect"
	"github.com/assessd/assessd/internal/classes"
	"github.com/assessd/assessd/internal/platform/apihttp"
	"github.com/assessd/assessd/internal/platform/paging"
)

type classServer struct{ svc *classes.Service }

var _ assessdv1connect.ClassServiceHandler = classServer{}

func (s classServer) ListClasses(ctx context.Context, req *connect.Request[v1.ListClassesRequest]) (*connect.Response[v1.ListClassesResponse], error) {
	p, err := paging.Parse(req.Msg.PageSize, req.Msg.PageToken)
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	list, next, err := s.svc.List(ctx, classes.Filter{ExternalID: req.Msg.ExternalId}, p)
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	out := &v1.ListClassesResponse{Classes: make([]*v1.Class, len(list)), NextPageToken: next}
	for i, c := range list {
		out.Classes[i] = classToProto(c)
	}
	return connect.NewResponse(out), nil
}

func (s classServer) CreateClass(ctx context.Context, req *connect.Request[v1.CreateClassRequest]) (*connect.Response[v1.Class], error) {
	c, err := s.svc.Create(ctx, classes.NewClass{Name: req.Msg.Name, ExternalID: req.Msg.ExternalId})
	return reply(ctx, c, err, classToProto)
}

func (s classServer) GetClass(ctx context.Context, req *connect.Request[v1.GetClassRequest]) (*connect.Response[v1.Class], error) {
	c, err := s.svc.Get(ctx, req.Msg.Id)
	return reply(ctx, c, err, classToProto)
}

func (s classServer) UpdateClass(ctx context.Context, req *connect.Request[v1.UpdateClassRequest]) (*connect.Response[v1.Class], error) {
	m := req.Msg
	c, err := s.svc.Update(ctx, m.Id, classes.Patch{Name: m.Name, ExternalID: m.ExternalId})
	return reply(ctx, c, err, classToProto)
}

func (s classServer) DeleteClass(ctx context.Context, req *connect.Request[v1.DeleteClassRequest]) (*connect.Response[emptypb.Empty], error) {
	if err := s.svc.Delete(ctx, req.Msg.Id); err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	return connect.NewResponse(&emptypb.Empty{}), nil
}

func (s classServer) ListClassMembers(ctx context.Context, req *connect.Request[v1.ListClassMembersRequest]) (*connect.Response[v1.ListClassMembersResponse], error) {
	p, err := paging.Parse(req.Msg.PageSize, req.Msg.PageToken)
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	list, next, err := s.svc.Members(ctx, req.Msg.ClassId, classes.MemberFilter{Role: classes.Role(req.Msg.Role)}, p)
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	out := &v1.ListClassMembersResponse{Members: make([]*v1.ClassMember, len(list)), NextPageToken: next}
	for i, m := range list {
		out.Members[i] = memberToProto(m)
	}
	return connect.NewResponse(out), nil
}

func (s classServer) AddClassMember(ctx context.Context, req *connect.Request[v1.AddClassMemberRequest]) (*connect.Response[v1.ClassMember], error) {
	m := req.Msg
	member, err := s.svc.AddMember(ctx, m.ClassId, classes.NewMember{UserID: m.UserId, Role: classes.Role(m.Role)})
	return reply(ctx, member, err, memberToProto)
}

func (s classServer) RemoveClassMember(ctx context.Context, req *connect.Request[v1.RemoveClassMemberRequest]) (*connect.Response[emptypb.Empty], error) {
	if err := s.svc.RemoveMember(ctx, req.Msg.ClassId, req.Msg.UserId); err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	return connect.NewResponse(&emptypb.Empty{}), nil
}

func classToProto(c classes.Class) *v1.Class {
	return &v1.Class{Id: c.ID, Name: c.Name, ExternalId: c.ExternalID, MemberCount: int32(c.MemberCount), //nolint:gosec // at most classes.MaxMembers
		CreatedAt: ts(c.CreatedAt), UpdatedAt: ts(c.UpdatedAt)}
}

func memberToProto(m classes.Member) *v1.ClassMember {
	return &v1.ClassMember{UserId: m.UserID, Name: m.Name, Email: m.Email, Role: string(m.Role), AddedAt: ts(m.AddedAt)}
}
