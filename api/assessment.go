package api

import (
	"context"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/emptypb"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/api/gen/assessd/v1/assessdv1connect"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/platform/apihttp"
	"github.com/assessd/assessd/internal/platform/paging"
)

// list parses the page request, runs fetch and converts the items; it is
// the shape every list endpoint shares.
func list[T, P any](ctx context.Context, size int32, token string, fetch func(paging.Page) ([]T, string, error), conv func(T) P) ([]P, string, error) {
	p, err := paging.Parse(size, token)
	if err != nil {
		return nil, "", apihttp.ToConnect(ctx, err)
	}
	items, next, err := fetch(p)
	if err != nil {
		return nil, "", apihttp.ToConnect(ctx, err)
	}
	out := make([]P, len(items))
	for i, it := range items {
		out[i] = conv(it)
	}
	return out, next, nil
}

func empty(ctx context.Context, err error) (*connect.Response[emptypb.Empty], error) {
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	return connect.NewResponse(&emptypb.Empty{}), nil
}

type folderServer struct{ svc *assessment.Service }

var _ assessdv1connect.FolderServiceHandler = folderServer{}

func (s folderServer) ListFolders(ctx context.Context, req *connect.Request[v1.ListFoldersRequest]) (*connect.Response[v1.ListFoldersResponse], error) {
	m := req.Msg
	items, next, err := list(ctx, m.PageSize, m.PageToken, func(p paging.Page) ([]assessment.Folder, string, error) {
		return s.svc.Folders(ctx, m.ParentId, p)
	}, folderToProto)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&v1.ListFoldersResponse{Folders: items, NextPageToken: next}), nil
}

func (s folderServer) CreateFolder(ctx context.Context, req *connect.Request[v1.CreateFolderRequest]) (*connect.Response[v1.Folder], error) {
	f, err := s.svc.CreateFolder(ctx, req.Msg.Name, req.Msg.ParentId)
	return reply(ctx, f, err, folderToProto)
}

func (s folderServer) GetFolder(ctx context.Context, req *connect.Request[v1.GetFolderRequest]) (*connect.Response[v1.Folder], error) {
	f, err := s.svc.Folder(ctx, req.Msg.Id)
	return reply(ctx, f, err, folderToProto)
}

func (s folderServer) UpdateFolder(ctx context.Context, req *connect.Request[v1.UpdateFolderRequest]) (*connect.Response[v1.Folder], error) {
	m := req.Msg
	f, err := s.svc.UpdateFolder(ctx, m.Id, assessment.FolderPatch{Name: m.Name, ParentID: m.ParentId})
	return reply(ctx, f, err, folderToProto)
}

func (s folderServer) DeleteFolder(ctx context.Context, req *connect.Request[v1.DeleteFolderRequest]) (*connect.Response[emptypb.Empty], error) {
	return empty(ctx, s.svc.DeleteFolder(ctx, req.Msg.Id))
}

type examServer struct{ svc *assessment.Service }

var _ assessdv1connect.ExamServiceHandler = examServer{}

func (s examServer) ListExams(ctx context.Context, req *connect.Request[v1.ListExamsRequest]) (*connect.Response[v1.ListExamsResponse], error) {
	m := req.Msg
	items, next, err := list(ctx, m.PageSize, m.PageToken, func(p paging.Page) ([]assessment.Exam, string, error) {
		return s.svc.Exams(ctx, assessment.ExamFilter{FolderID: m.FolderId, Query: m.Q}, p)
	}, examToProto)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&v1.ListExamsResponse{Exams: items, NextPageToken: next}), nil
}

func (s examServer) CreateExam(ctx context.Context, req *connect.Request[v1.CreateExamRequest]) (*connect.Response[v1.Exam], error) {
	m := req.Msg
	e, err := s.svc.CreateExam(ctx, assessment.NewExam{Name: m.Name, Language: m.Language, FolderID: m.FolderId,
		Description: m.Description, DurationMinutes: int(m.DurationMinutes)})
	return reply(ctx, e, err, examToProto)
}

func (s examServer) GetExam(ctx context.Context, req *connect.Request[v1.GetExamRequest]) (*connect.Response[v1.Exam], error) {
	e, err := s.svc.Exam(ctx, req.Msg.Id)
	return reply(ctx, e, err, examToProto)
}

func (s examServer) UpdateExam(ctx context.Context, req *connect.Request[v1.UpdateExamRequest]) (*connect.Response[v1.Exam], error) {
	m := req.Msg
	p := assessment.ExamPatch{Name: m.Name, Language: m.Language, FolderID: m.FolderId, Description: m.Description}
	if m.DurationMinutes != nil {
		d := int(*m.DurationMinutes)
		p.DurationMinutes = &d
	}
	e, err := s.svc.UpdateExam(ctx, m.Id, p)
	return reply(ctx, e, err, examToProto)
}

func (s examServer) DeleteExam(ctx context.Context, req *connect.Request[v1.DeleteExamRequest]) (*connect.Response[emptypb.Empty], error) {
	return empty(ctx, s.svc.DeleteExam(ctx, req.Msg.Id))
}

type questionServer struct{ svc *assessment.Service }

var _ assessdv1connect.QuestionServiceHandler = questionServer{}

func (s questionServer) ListQuestions(ctx context.Context, req *connect.Request[v1.ListQuestionsRequest]) (*connect.Response[v1.ListQuestionsResponse], error) {
	m := req.Msg
	items, next, err := list(ctx, m.PageSize, m.PageToken, func(p paging.Page) ([]assessment.Question, string, error) {
		return s.svc.Questions(ctx, m.ExamId, p)
	}, questionToProto)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&v1.ListQuestionsResponse{Questions: items, NextPageToken: next}), nil
}

func (s questionServer) CreateQuestion(ctx context.Context, req *connect.Request[v1.CreateQuestionRequest]) (*connect.Response[v1.Question], error) {
	m := req.Msg
	q, err := s.svc.CreateQuestion(ctx, m.ExamId, assessment.NewQuestion{Type: m.Type, Prompt: m.Prompt,
		Config: fromStruct(m.Config), Points: m.Points})
	return reply(ctx, q, err, questionToProto)
}

func (s questionServer) ReorderQuestions(ctx context.Context, req *connect.Request[v1.ReorderQuestionsRequest]) (*connect.Response[v1.ListQuestionsResponse], error) {
	qs, err := s.svc.ReorderQuestions(ctx, req.Msg.ExamId, req.Msg.QuestionIds)
	if err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	out := &v1.ListQuestionsResponse{Questions: make([]*v1.Question, len(qs))}
	for i, q := range qs {
		out.Questions[i] = questionToProto(q)
	}
	return connect.NewResponse(out), nil
}

func (s questionServer) GetQuestion(ctx context.Context, req *connect.Request[v1.GetQuestionRequest]) (*connect.Response[v1.Question], error) {
	q, err := s.svc.Question(ctx, req.Msg.ExamId, req.Msg.QuestionId)
	return reply(ctx, q, err, questionToProto)
}

func (s questionServer) UpdateQuestion(ctx context.Context, req *connect.Request[v1.UpdateQuestionRequest]) (*connect.Response[v1.Question], error) {
	m := req.Msg
	q, err := s.svc.UpdateQuestion(ctx, m.ExamId, m.QuestionId, assessment.QuestionPatch{Type: m.Type, Prompt: m.Prompt,
		Config: fromStruct(m.Config), Points: m.Points})
	return reply(ctx, q, err, questionToProto)
}

func (s questionServer) DeleteQuestion(ctx context.Context, req *connect.Request[v1.DeleteQuestionRequest]) (*connect.Response[emptypb.Empty], error) {
	return empty(ctx, s.svc.DeleteQuestion(ctx, req.Msg.ExamId, req.Msg.QuestionId))
}

func (s questionServer) GetQuestionQuality(ctx context.Context, req *connect.Request[v1.GetQuestionQualityRequest]) (*connect.Response[v1.QuestionQuality], error) {
	r, err := s.svc.Quality(ctx, req.Msg.ExamId, req.Msg.QuestionId)
	return reply(ctx, r, err, qualityToProto)
}

type questionTypeServer struct{ svc *assessment.Service }

var _ assessdv1connect.QuestionTypeServiceHandler = questionTypeServer{}

func (s questionTypeServer) ListQuestionTypes(ctx context.Context, req *connect.Request[v1.ListQuestionTypesRequest]) (*connect.Response[v1.ListQuestionTypesResponse], error) {
	return s.typeList(ctx, req.Msg.PageSize, req.Msg.PageToken, s.svc.QuestionTypes)
}

func (s questionTypeServer) DiscoverQuestionTypes(ctx context.Context, req *connect.Request[v1.DiscoverQuestionTypesRequest]) (*connect.Response[v1.ListQuestionTypesResponse], error) {
	return s.typeList(ctx, req.Msg.PageSize, req.Msg.PageToken, s.svc.DiscoverQuestionTypes)
}

func (s questionTypeServer) typeList(ctx context.Context, size int32, token string, fetch func(context.Context, paging.Page) ([]assessment.TypeDef, string, error)) (*connect.Response[v1.ListQuestionTypesResponse], error) {
	items, next, err := list(ctx, size, token, func(p paging.Page) ([]assessment.TypeDef, string, error) {
		return fetch(ctx, p)
	}, typeToProto)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&v1.ListQuestionTypesResponse{QuestionTypes: items, NextPageToken: next}), nil
}

func (s questionTypeServer) CreateQuestionType(ctx context.Context, req *connect.Request[v1.CreateQuestionTypeRequest]) (*connect.Response[v1.QuestionType], error) {
	m := req.Msg
	t, err := s.svc.CreateQuestionType(ctx, assessment.NewTypeDef{
		Key: m.Key, Name: m.Name, Description: m.Description, ConfigSchema: fromStruct(m.ConfigSchema),
		Condition: m.GetResponseProcessing().GetCondition(), GradingEnabled: m.GetGrading().GetEnabled(),
		FileInputs: m.GetGrading().GetFileInputs(), Public: m.Public, Deprecated: m.Deprecated,
	})
	return reply(ctx, t, err, typeToProto)
}

func (s questionTypeServer) GetQuestionType(ctx context.Context, req *connect.Request[v1.GetQuestionTypeRequest]) (*connect.Response[v1.QuestionType], error) {
	t, err := s.svc.QuestionType(ctx, req.Msg.Id)
	return reply(ctx, t, err, typeToProto)
}

func (s questionTypeServer) UpdateQuestionType(ctx context.Context, req *connect.Request[v1.UpdateQuestionTypeRequest]) (*connect.Response[v1.QuestionType], error) {
	m := req.Msg
	p := assessment.TypeDefPatch{Name: m.Name, Description: m.Description, ConfigSchema: fromStruct(m.ConfigSchema),
		Public: m.Public, Deprecated: m.Deprecated}
	if rp := m.ResponseProcessing; rp != nil {
		p.Condition = rp.Condition
	}
	if g := m.Grading; g != nil {
		p.GradingEnabled, p.FileInputs = g.Enabled, g.FileInputs
	}
	t, err := s.svc.UpdateQuestionType(ctx, m.Id, p)
	return reply(ctx, t, err, typeToProto)
}

func (s questionTypeServer) EnableQuestionType(ctx context.Context, req *connect.Request[v1.EnableQuestionTypeRequest]) (*connect.Response[v1.QuestionType], error) {
	t, err := s.svc.EnableQuestionType(ctx, req.Msg.Id)
	return reply(ctx, t, err, typeToProto)
}

func (s questionTypeServer) DisableQuestionType(ctx context.Context, req *connect.Request[v1.DisableQuestionTypeRequest]) (*connect.Response[v1.QuestionType], error) {
	t, err := s.svc.DisableQuestionType(ctx, req.Msg.Id)
	return reply(ctx, t, err, typeToProto)
}

type resultServer struct{ svc *assessment.Service }

var _ assessdv1connect.ResultServiceHandler = resultServer{}

func (s resultServer) SubmitResult(ctx context.Context, req *connect.Request[v1.SubmitResultRequest]) (*connect.Response[v1.Result], error) {
	r, err := s.svc.SubmitResult(ctx, req.Msg.ExamId, newResultFrom(req.Msg))
	return reply(ctx, r, err, resultToProto)
}

func newResultFrom(m *v1.SubmitResultRequest) assessment.NewResult {
	in := assessment.NewResult{UserID: m.UserId, Answers: make([]assessment.NewAnswer, len(m.Answers))}
	for i, a := range m.Answers {
		in.Answers[i] = assessment.NewAnswer{QuestionID: a.QuestionId, Value: a.Value.AsInterface(), Files: a.Files}
	}
	return in
}

func (s resultServer) ListResults(ctx context.Context, req *connect.Request[v1.ListResultsRequest]) (*connect.Response[v1.ListResultsResponse], error) {
	m := req.Msg
	items, next, err := list(ctx, m.PageSize, m.PageToken, func(p paging.Page) ([]assessment.Result, string, error) {
		return s.svc.Results(ctx, m.ExamId, assessment.ResultFilter{UserID: m.UserId, Status: m.Status}, p)
	}, resultToProto)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&v1.ListResultsResponse{Results: items, NextPageToken: next}), nil
}

func (s resultServer) GetResultsSummary(ctx context.Context, req *connect.Request[v1.GetResultsSummaryRequest]) (*connect.Response[v1.ResultsSummary], error) {
	sum, err := s.svc.Summarize(ctx, req.Msg.ExamId)
	return reply(ctx, sum, err, summaryToProto)
}

func (s resultServer) GetResult(ctx context.Context, req *connect.Request[v1.GetResultRequest]) (*connect.Response[v1.Result], error) {
	r, err := s.svc.AwaitResult(ctx, "", req.Msg.Id, req.Msg.Wait.AsDuration())
	return reply(ctx, r, err, resultToProto)
}

func (s resultServer) GetExamResult(ctx context.Context, req *connect.Request[v1.GetExamResultRequest]) (*connect.Response[v1.Result], error) {
	r, err := s.svc.AwaitResult(ctx, req.Msg.ExamId, req.Msg.Id, req.Msg.Wait.AsDuration())
	return reply(ctx, r, err, resultToProto)
}
