// Package observability holds the Prometheus registry and metrics, the
// structured logger, and the per-request facts (id, route, organization)
// that metrics and logs are labelled with.
package observability

import (
	"context"
	"log/slog"
)

// RequestInfo is filled in as a request passes the middleware chain and
// read back when it completes: the route template once routing has chosen
// one, the organization once the caller is authenticated.
type RequestInfo struct {
	ID    string
	Route string
	OrgID string
}

type infoKey struct{}

// WithRequestInfo returns ctx carrying info.
func WithRequestInfo(ctx context.Context, info *RequestInfo) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// Info returns the request's info; a detached zero value outside a request.
func Info(ctx context.Context) *RequestInfo {
	if info, ok := ctx.Value(infoKey{}).(*RequestInfo); ok {
		return info
	}
	return &RequestInfo{}
}

// contextHandler adds the request id and organization of the context to
// every log record, so any log line can be tied to its request and tenant.
type contextHandler struct{ slog.Handler }

func (h contextHandler) Handle(ctx context.Context, r slog.Record) error {
	if info, ok := ctx.Value(infoKey{}).(*RequestInfo); ok {
		if info.ID != "" {
			r.AddAttrs(slog.String("request_id", info.ID))
		}
		if info.OrgID != "" {
			r.AddAttrs(slog.String("org", info.OrgID))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h contextHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return contextHandler{h.Handler.WithAttrs(attrs)}
}

func (h contextHandler) WithGroup(name string) slog.Handler {
	return contextHandler{h.Handler.WithGroup(name)}
}

// NewLogger returns a JSON logger writing to h's destination that adds the
// request id and organization from the context.
func NewLogger(h slog.Handler) *slog.Logger { return slog.New(contextHandler{h}) }
