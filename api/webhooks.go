package api

import (
	"context"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/emptypb"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/api/gen/assessd/v1/assessdv1connect"
	"github.com/assessd/assessd/internal/platform/apihttp"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/webhooks"
)

type webhookServer struct{ svc *webhooks.Service }

var _ assessdv1connect.WebhookEndpointServiceHandler = webhookServer{}

func (s webhookServer) ListWebhookEndpoints(ctx context.Context, req *connect.Request[v1.ListWebhookEndpointsRequest]) (*connect.Response[v1.ListWebhookEndpointsResponse], error) {
	p, err := paging.Parse(req.Msg.PageSize, req.Msg.PageToken)
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	list, next, err := s.svc.ListEndpoints(ctx, p)
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	out := &v1.ListWebhookEndpointsResponse{WebhookEndpoints: make([]*v1.WebhookEndpoint, len(list)), NextPageToken: next}
	for i, e := range list {
		out.WebhookEndpoints[i] = endpointToProto(e)
	}
	return connect.NewResponse(out), nil
}

func (s webhookServer) CreateWebhookEndpoint(ctx context.Context, req *connect.Request[v1.CreateWebhookEndpointRequest]) (*connect.Response[v1.WebhookEndpoint], error) {
	m := req.Msg
	e, err := s.svc.CreateEndpoint(ctx, webhooks.NewEndpoint{URL: m.Url, Events: m.Events, Description: m.Description, Enabled: m.Enabled})
	return reply(ctx, e, err, endpointToProto)
}

func (s webhookServer) GetWebhookEndpoint(ctx context.Context, req *connect.Request[v1.GetWebhookEndpointRequest]) (*connect.Response[v1.WebhookEndpoint], error) {
	e, err := s.svc.Endpoint(ctx, req.Msg.Id)
	return reply(ctx, e, err, endpointToProto)
}

func (s webhookServer) UpdateWebhookEndpoint(ctx context.Context, req *connect.Request[v1.UpdateWebhookEndpointRequest]) (*connect.Response[v1.WebhookEndpoint], error) {
	m := req.Msg
	p := webhooks.EndpointPatch{URL: m.Url, Description: m.Description, Enabled: m.Enabled}
	if len(m.Events) > 0 {
		p.Events = m.Events
	}
	e, err := s.svc.UpdateEndpoint(ctx, m.Id, p)
	return reply(ctx, e, err, endpointToProto)
}

func (s webhookServer) DeleteWebhookEndpoint(ctx context.Context, req *connect.Request[v1.DeleteWebhookEndpointRequest]) (*connect.Response[emptypb.Empty], error) {
	if err := s.svc.DeleteEndpoint(ctx, req.Msg.Id); err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	return connect.NewResponse(&emptypb.Empty{}), nil
}

func (s webhookServer) RotateWebhookSecret(ctx context.Context, req *connect.Request[v1.RotateWebhookSecretRequest]) (*connect.Response[v1.WebhookEndpoint], error) {
	e, err := s.svc.RotateSecret(ctx, req.Msg.Id)
	return reply(ctx, e, err, endpointToProto)
}

func (s webhookServer) ListWebhookDeliveries(ctx context.Context, req *connect.Request[v1.ListWebhookDeliveriesRequest]) (*connect.Response[v1.ListWebhookDeliveriesResponse], error) {
	p, err := paging.Parse(req.Msg.PageSize, req.Msg.PageToken)
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	list, next, err := s.svc.Deliveries(ctx, req.Msg.EndpointId, p)
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	out := &v1.ListWebhookDeliveriesResponse{WebhookDeliveries: make([]*v1.WebhookDelivery, len(list)), NextPageToken: next}
	for i, d := range list {
		out.WebhookDeliveries[i] = deliveryToProto(d)
	}
	return connect.NewResponse(out), nil
}

func (s webhookServer) RedeliverWebhook(ctx context.Context, req *connect.Request[v1.RedeliverWebhookRequest]) (*connect.Response[emptypb.Empty], error) {
	if err := s.svc.Redeliver(ctx, req.Msg.EndpointId, req.Msg.DeliveryId); err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	return connect.NewResponse(&emptypb.Empty{}), nil
}

func endpointToProto(e webhooks.Endpoint) *v1.WebhookEndpoint {
	evs := make([]string, len(e.Events))
	for i, t := range e.Events {
		evs[i] = string(t)
	}
	return &v1.WebhookEndpoint{Id: e.ID, Url: e.URL, Events: evs, Description: e.Description, Enabled: e.Enabled,
		DisabledReason: e.DisabledReason, Secret: e.Secret, CreatedAt: ts(e.CreatedAt), UpdatedAt: ts(e.UpdatedAt)}
}

func deliveryToProto(d webhooks.Delivery) *v1.WebhookDelivery {
	status := "failed"
	if d.Succeeded {
		status = "succeeded"
	}
	return &v1.WebhookDelivery{Id: d.ID, EndpointId: d.EndpointID, EventId: d.EventID, EventType: string(d.EventType),
		Attempt: int32(d.Attempt), Status: status, ResponseCode: int32(d.ResponseCode), //nolint:gosec // attempts and HTTP statuses are small
		DurationMs: d.Duration.Milliseconds(), ResponseExcerpt: d.ResponseExcerpt, Error: d.Error, CreatedAt: ts(d.CreatedAt)}
}
