package api

import (
	"context"

	"connectrpc.com/connect"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/api/gen/assessd/v1/assessdv1connect"
	"github.com/assessd/assessd/internal/embedflow"
	"github.com/assessd/assessd/internal/platform/apihttp"
)

type embedServer struct{ svc *embedflow.Service }

var _ assessdv1connect.EmbedServiceHandler = embedServer{}

func (s embedServer) CreateEmbedSession(ctx context.Context, req *connect.Request[v1.CreateEmbedSessionRequest]) (*connect.Response[v1.EmbedSession], error) {
	m := req.Msg
	in := embedflow.NewSession{Flow: m.Flow, ActorID: m.Actor, ExamID: m.ExamId, ResultID: m.ResultId, AssignmentID: m.AssignmentId,
		Presets: fromStruct(m.Presets), ExpiresIn: m.ExpiresIn, AllowedOrigins: m.AllowedOrigins}
	if m.Theme != nil {
		t := m.Theme
		in.Strings = t.Strings
		in.Look = embedflow.Look{FontFamily: t.FontFamily, Radius: t.Radius, Language: t.Language}
		if c := t.Colors; c != nil {
			in.Look.Colors = embedflow.Colors{Primary: c.Primary, Background: c.Background, Text: c.Text}
		}
	}
	sess, err := s.svc.Create(ctx, in)
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	return connect.NewResponse(&v1.EmbedSession{Id: sess.ID, Url: s.svc.URL(sess), ExpiresAt: ts(sess.ExpiresAt)}), nil
}
