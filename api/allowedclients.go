package api

import (
	"context"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/emptypb"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/api/gen/assessd/v1/assessdv1connect"
	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/platform/apihttp"
	"github.com/assessd/assessd/internal/platform/paging"
)

// AllowedClients is what the API needs of client registration to manage the
// clients an organization allowed extra scopes.
type AllowedClients interface {
	AllowedClients(ctx context.Context, page paging.Page) ([]clients.AllowedClient, string, error)
	AllowClient(ctx context.Context, clientID string, scopes []string) (clients.AllowedClient, error)
	RemoveAllowedClient(ctx context.Context, clientID string) error
}

type allowedClientServer struct{ svc AllowedClients }

var _ assessdv1connect.AllowedClientServiceHandler = allowedClientServer{}

func (s allowedClientServer) ListAllowedClients(ctx context.Context, req *connect.Request[v1.ListAllowedClientsRequest]) (*connect.Response[v1.ListAllowedClientsResponse], error) {
	p, err := paging.Parse(req.Msg.PageSize, req.Msg.PageToken)
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	list, next, err := s.svc.AllowedClients(ctx, p)
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	out := &v1.ListAllowedClientsResponse{AllowedClients: make([]*v1.AllowedClient, len(list)), NextPageToken: next}
	for i, a := range list {
		out.AllowedClients[i] = allowedClientToProto(a)
	}
	return connect.NewResponse(out), nil
}

func (s allowedClientServer) AllowClient(ctx context.Context, req *connect.Request[v1.AllowClientRequest]) (*connect.Response[v1.AllowedClient], error) {
	a, err := s.svc.AllowClient(ctx, req.Msg.ClientId, req.Msg.Scopes)
	return reply(ctx, a, err, allowedClientToProto)
}

func (s allowedClientServer) RemoveAllowedClient(ctx context.Context, req *connect.Request[v1.RemoveAllowedClientRequest]) (*connect.Response[emptypb.Empty], error) {
	if err := s.svc.RemoveAllowedClient(ctx, req.Msg.ClientId); err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	return connect.NewResponse(&emptypb.Empty{}), nil
}

func allowedClientToProto(a clients.AllowedClient) *v1.AllowedClient {
	return &v1.AllowedClient{ClientId: a.ClientID, Name: a.Name, Description: a.Description, Scopes: a.Scopes,
		AllowedBy: a.AllowedBy, CreatedAt: ts(a.CreatedAt)}
}
