package api

import (
	"context"

	"connectrpc.com/connect"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/api/gen/assessd/v1/assessdv1connect"
	"github.com/assessd/assessd/tenancy"
)

type orgServer struct{ svc *tenancy.Service }

var _ assessdv1connect.OrgServiceHandler = orgServer{}

func (s orgServer) GetOrg(ctx context.Context, _ *connect.Request[v1.GetOrgRequest]) (*connect.Response[v1.Org], error) {
	o, err := s.svc.Org(ctx)
	return reply(ctx, o, err, orgToProto)
}

func (s orgServer) UpdateOrg(ctx context.Context, req *connect.Request[v1.UpdateOrgRequest]) (*connect.Response[v1.Org], error) {
	p := tenancy.OrgPatch{Name: req.Msg.Name}
	if st := req.Msg.Settings; st != nil {
		p.AIRegion = st.AiRegion
	}
	o, err := s.svc.UpdateOrg(ctx, p)
	return reply(ctx, o, err, orgToProto)
}
