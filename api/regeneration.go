package api

import (
	"context"

	"connectrpc.com/connect"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/api/gen/assessd/v1/assessdv1connect"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/regeneration"
)

type regenerationServer struct {
	svc     *regeneration.Service
	content *assessment.Service
}

var _ assessdv1connect.QuestionRegenerationServiceHandler = regenerationServer{}

func (s regenerationServer) CreateQuestionRegeneration(ctx context.Context, req *connect.Request[v1.CreateQuestionRegenerationRequest]) (*connect.Response[v1.QuestionRegeneration], error) {
	m := req.Msg
	g, err := s.svc.Create(ctx, m.ExamId, m.QuestionId, m.Instructions)
	return reply(ctx, g, err, regenerationToProto)
}

func (s regenerationServer) GetQuestionRegeneration(ctx context.Context, req *connect.Request[v1.GetQuestionRegenerationRequest]) (*connect.Response[v1.QuestionRegeneration], error) {
	g, err := s.svc.Get(ctx, req.Msg.Id)
	return reply(ctx, g, err, regenerationToProto)
}

func (s regenerationServer) AcceptQuestionRegeneration(ctx context.Context, req *connect.Request[v1.AcceptQuestionRegenerationRequest]) (*connect.Response[v1.Question], error) {
	_, q, err := s.svc.Accept(ctx, req.Msg.Id)
	return reply(ctx, q, err, questionToProto)
}

func (s regenerationServer) ListQuestionRevisions(ctx context.Context, req *connect.Request[v1.ListQuestionRevisionsRequest]) (*connect.Response[v1.ListQuestionRevisionsResponse], error) {
	m := req.Msg
	items, next, err := list(ctx, m.PageSize, m.PageToken, func(p paging.Page) ([]assessment.Revision, string, error) {
		return s.content.QuestionRevisions(ctx, m.ExamId, m.QuestionId, p)
	}, revisionToProto)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&v1.ListQuestionRevisionsResponse{Revisions: items, NextPageToken: next}), nil
}

func regenerationToProto(g regeneration.Regeneration) *v1.QuestionRegeneration {
	out := &v1.QuestionRegeneration{
		Id: g.ID, Status: g.Status, ExamId: g.ExamID, QuestionId: g.QuestionID, Region: g.Region,
		Instructions: g.Instructions, BaseRevision: int32(g.BaseRevision), Error: g.Error,
		AcceptedRevision: int32(g.AcceptedRevision), AcceptedAt: ts(g.AcceptedAt),
		CreatedAt: ts(g.CreatedAt), UpdatedAt: ts(g.UpdatedAt),
	}
	if p := g.Proposal; p != nil {
		out.Proposal = &v1.QuestionProposal{Prompt: p.Prompt, Config: toStruct(p.Config), Points: p.Points}
	}
	return out
}

func revisionToProto(r assessment.Revision) *v1.QuestionRevision {
	return &v1.QuestionRevision{
		QuestionId: r.QuestionID, Revision: int32(r.Revision), Type: r.Type, Prompt: r.Prompt,
		Config: toStruct(r.Config), Points: r.Points, Source: r.Source, RegenerationId: r.RegenerationID,
		CreatedBy: r.CreatedBy, CreatedAt: ts(r.CreatedAt),
	}
}
