package api

import (
	"context"

	"connectrpc.com/connect"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/api/gen/assessd/v1/assessdv1connect"
	"github.com/assessd/assessd/internal/generation"
)

type generationServer struct{ svc *generation.Service }

var _ assessdv1connect.ExamGenerationServiceHandler = generationServer{}

func (s generationServer) CreateExamGeneration(ctx context.Context, req *connect.Request[v1.CreateExamGenerationRequest]) (*connect.Response[v1.ExamGeneration], error) {
	m := req.Msg
	g, err := s.svc.Create(ctx, generation.Params{
		Subject: m.Subject, StudentLevel: m.StudentLevel, DurationMinutes: int(m.DurationMinutes), Taxonomy: m.Taxonomy,
		QuestionTypes: m.QuestionTypes, Language: m.Language, Count: int(m.Count),
	})
	return reply(ctx, g, err, generationToProto)
}

func (s generationServer) GetExamGeneration(ctx context.Context, req *connect.Request[v1.GetExamGenerationRequest]) (*connect.Response[v1.ExamGeneration], error) {
	g, err := s.svc.Get(ctx, req.Msg.Id)
	return reply(ctx, g, err, generationToProto)
}

func generationToProto(g generation.Generation) *v1.ExamGeneration {
	p := g.Params
	return &v1.ExamGeneration{
		Id: g.ID, Status: g.Status, ExamId: g.ExamID, Error: g.Error, Region: g.Region,
		Request: &v1.CreateExamGenerationRequest{Subject: p.Subject, StudentLevel: p.StudentLevel, DurationMinutes: int32(p.DurationMinutes),
			Taxonomy: p.Taxonomy, QuestionTypes: p.QuestionTypes, Language: p.Language, Count: int32(p.Count)},
		CreatedAt: ts(g.CreatedAt), UpdatedAt: ts(g.UpdatedAt),
	}
}
