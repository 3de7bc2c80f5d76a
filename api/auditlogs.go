package api

import (
	"context"

	"connectrpc.com/connect"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/api/gen/assessd/v1/assessdv1connect"
	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/platform/apihttp"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/tenancy"
)

type auditServer struct{ svc *tenancy.Service }

var _ assessdv1connect.AuditLogServiceHandler = auditServer{}

func (s auditServer) ListAuditLogs(ctx context.Context, req *connect.Request[v1.ListAuditLogsRequest]) (*connect.Response[v1.ListAuditLogsResponse], error) {
	m := req.Msg
	p, err := paging.Parse(m.PageSize, m.PageToken)
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	f := audit.Filter{Action: m.Action, ActorID: m.ActorId, TargetType: m.TargetType, TargetID: m.TargetId}
	if m.Since != nil {
		f.Since = m.Since.AsTime()
	}
	if m.Until != nil {
		f.Until = m.Until.AsTime()
	}
	entries, next, err := s.svc.AuditLogs(ctx, f, p)
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	out := &v1.ListAuditLogsResponse{AuditLogs: make([]*v1.AuditLogEntry, len(entries)), NextPageToken: next}
	for i, e := range entries {
		out.AuditLogs[i] = auditToProto(e)
	}
	return connect.NewResponse(out), nil
}

func (s auditServer) CreateAuditLog(ctx context.Context, req *connect.Request[v1.CreateAuditLogRequest]) (*connect.Response[v1.AuditLogEntry], error) {
	m := req.Msg
	e := audit.Entry{
		Action: m.Action, Session: m.Session, Reason: m.Reason,
		Before: fromStruct(m.Before), After: fromStruct(m.After),
	}
	if m.Target != nil {
		e.Target = audit.Target{Type: m.Target.Type, ID: m.Target.Id}
	}
	entry, err := s.svc.AppendAppEntry(ctx, e)
	return reply(ctx, entry, err, auditToProto)
}
