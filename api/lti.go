package api

import (
	"context"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/emptypb"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/api/gen/assessd/v1/assessdv1connect"
	"github.com/assessd/assessd/internal/lti"
	"github.com/assessd/assessd/internal/platform/apihttp"
	"github.com/assessd/assessd/internal/platform/paging"
)

type ltiPlatformServer struct{ svc *lti.Service }

var _ assessdv1connect.LtiPlatformServiceHandler = ltiPlatformServer{}

func (s ltiPlatformServer) ListLtiPlatforms(ctx context.Context, req *connect.Request[v1.ListLtiPlatformsRequest]) (*connect.Response[v1.ListLtiPlatformsResponse], error) {
	p, err := paging.Parse(req.Msg.PageSize, req.Msg.PageToken)
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	list, next, err := s.svc.ListPlatforms(ctx, p)
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	out := &v1.ListLtiPlatformsResponse{Platforms: make([]*v1.LtiPlatform, len(list)), NextPageToken: next}
	for i, pl := range list {
		out.Platforms[i] = s.toProto(pl)
	}
	return connect.NewResponse(out), nil
}

func (s ltiPlatformServer) CreateLtiPlatform(ctx context.Context, req *connect.Request[v1.CreateLtiPlatformRequest]) (*connect.Response[v1.LtiPlatform], error) {
	m := req.Msg
	p, err := s.svc.CreatePlatform(ctx, lti.NewPlatform{Name: m.Name, Issuer: m.Issuer, ClientID: m.ClientId, DeploymentIDs: m.DeploymentIds,
		AuthLoginURL: m.AuthLoginUrl, AccessTokenURL: m.AccessTokenUrl, JWKSURL: m.JwksUrl})
	return reply(ctx, p, err, s.toProto)
}

func (s ltiPlatformServer) GetLtiPlatform(ctx context.Context, req *connect.Request[v1.GetLtiPlatformRequest]) (*connect.Response[v1.LtiPlatform], error) {
	p, err := s.svc.Platform(ctx, req.Msg.Id)
	return reply(ctx, p, err, s.toProto)
}

func (s ltiPlatformServer) UpdateLtiPlatform(ctx context.Context, req *connect.Request[v1.UpdateLtiPlatformRequest]) (*connect.Response[v1.LtiPlatform], error) {
	m := req.Msg
	deployments, err := idList("deploymentIds", m.DeploymentIds)
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	p, err := s.svc.UpdatePlatform(ctx, m.Id, lti.PlatformPatch{Name: m.Name, Issuer: m.Issuer, ClientID: m.ClientId, DeploymentIDs: deployments,
		AuthLoginURL: m.AuthLoginUrl, AccessTokenURL: m.AccessTokenUrl, JWKSURL: m.JwksUrl})
	return reply(ctx, p, err, s.toProto)
}

func (s ltiPlatformServer) DeleteLtiPlatform(ctx context.Context, req *connect.Request[v1.DeleteLtiPlatformRequest]) (*connect.Response[emptypb.Empty], error) {
	if err := s.svc.DeletePlatform(ctx, req.Msg.Id); err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	return connect.NewResponse(&emptypb.Empty{}), nil
}

func (s ltiPlatformServer) SyncClassRoster(ctx context.Context, req *connect.Request[v1.SyncClassRosterRequest]) (*connect.Response[v1.ClassRosterSync], error) {
	sync, err := s.svc.SyncClass(ctx, req.Msg.ClassId)
	return reply(ctx, sync, err, func(r lti.RosterSync) *v1.ClassRosterSync {
		return &v1.ClassRosterSync{ClassId: r.ClassID, Members: int32(r.Members), Added: int32(r.Added), Removed: int32(r.Removed), Skipped: int32(r.Skipped)}
	})
}

func (s ltiPlatformServer) toProto(p lti.Platform) *v1.LtiPlatform {
	tool := s.svc.Tool()
	return &v1.LtiPlatform{Id: p.ID, Name: p.Name, Issuer: p.Issuer, ClientId: p.ClientID, DeploymentIds: p.DeploymentIDs,
		AuthLoginUrl: p.AuthLoginURL, AccessTokenUrl: p.AccessTokenURL, JwksUrl: p.JWKSURL,
		Tool:      &v1.LtiToolConfiguration{LoginUrl: tool.LoginURL, LaunchUrl: tool.LaunchURL, DeepLinkingUrl: tool.DeepLinkingURL, JwksUrl: tool.JWKSURL},
		CreatedAt: ts(p.CreatedAt), UpdatedAt: ts(p.UpdatedAt)}
}
