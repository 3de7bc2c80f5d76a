package api

import (
	"context"
	"fmt"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/api/gen/assessd/v1/assessdv1connect"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/delivery"
	"github.com/assessd/assessd/internal/platform/apihttp"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
)

type assignmentServer struct{ svc *delivery.Service }

var _ assessdv1connect.AssignmentServiceHandler = assignmentServer{}

func (s assignmentServer) CreateAssignment(ctx context.Context, req *connect.Request[v1.CreateAssignmentRequest]) (*connect.Response[v1.Assignment], error) {
	m := req.Msg
	a, err := s.svc.CreateAssignment(ctx, delivery.NewAssignment{
		ExamID: m.ExamId, ClassIDs: m.ClassIds, UserIDs: m.UserIds, OpensAt: timeOf(m.OpensAt), ClosesAt: timeOf(m.ClosesAt),
		TimeLimitMinutes: intOf(m.TimeLimitMinutes), MaxAttempts: intOf(m.MaxAttempts), ShuffleQuestions: m.ShuffleQuestions,
		ShuffleOptions: m.ShuffleOptions, GraceSeconds: intOf(m.GraceSeconds), Overdue: m.Overdue, ShowResults: m.ShowResults,
	})
	return reply(ctx, a, err, assignmentToProto)
}

func (s assignmentServer) ListAssignments(ctx context.Context, req *connect.Request[v1.ListAssignmentsRequest]) (*connect.Response[v1.ListAssignmentsResponse], error) {
	m := req.Msg
	items, next, err := list(ctx, m.PageSize, m.PageToken, func(p paging.Page) ([]delivery.Assignment, string, error) {
		return s.svc.Assignments(ctx, delivery.AssignmentFilter{ExamID: m.ExamId}, p)
	}, assignmentToProto)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&v1.ListAssignmentsResponse{Assignments: items, NextPageToken: next}), nil
}

func (s assignmentServer) GetAssignment(ctx context.Context, req *connect.Request[v1.GetAssignmentRequest]) (*connect.Response[v1.Assignment], error) {
	a, err := s.svc.Assignment(ctx, req.Msg.Id)
	return reply(ctx, a, err, assignmentToProto)
}

func (s assignmentServer) UpdateAssignment(ctx context.Context, req *connect.Request[v1.UpdateAssignmentRequest]) (*connect.Response[v1.Assignment], error) {
	m := req.Msg
	patch := delivery.AssignmentPatch{
		TimeLimitMinutes: intOf(m.TimeLimitMinutes), MaxAttempts: intOf(m.MaxAttempts), ShuffleQuestions: m.ShuffleQuestions,
		ShuffleOptions: m.ShuffleOptions, GraceSeconds: intOf(m.GraceSeconds), Overdue: m.Overdue, ShowResults: m.ShowResults,
	}
	if m.OpensAt != nil {
		patch.OpensAt = new(m.OpensAt.AsTime())
	}
	if m.ClosesAt != nil {
		patch.ClosesAt = new(m.ClosesAt.AsTime())
	}
	var err error
	if patch.ClassIDs, err = idList("classIds", m.ClassIds); err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	if patch.UserIDs, err = idList("userIds", m.UserIds); err != nil {
		return nil, apihttp.ToConnect(ctx, err)
	}
	a, err := s.svc.UpdateAssignment(ctx, m.Id, patch)
	return reply(ctx, a, err, assignmentToProto)
}

func (s assignmentServer) DeleteAssignment(ctx context.Context, req *connect.Request[v1.DeleteAssignmentRequest]) (*connect.Response[emptypb.Empty], error) {
	return empty(ctx, s.svc.DeleteAssignment(ctx, req.Msg.Id))
}

func (s assignmentServer) SetAccommodation(ctx context.Context, req *connect.Request[v1.SetAccommodationRequest]) (*connect.Response[v1.Accommodation], error) {
	m := req.Msg
	in := delivery.Accommodation{AssignmentID: m.AssignmentId, UserID: m.UserId, ExtraTimePercent: int(m.ExtraTimePercent),
		ExtraMinutes: int(m.ExtraMinutes), ClosesAt: timeOf(m.ClosesAt)}
	if m.MaxAttempts != nil {
		if *m.MaxAttempts < 1 {
			return nil, apihttp.ToConnect(ctx, errs.Invalid("maxAttempts", "must be between 1 and %d", delivery.MaxAttempts))
		}
		in.MaxAttempts = int(*m.MaxAttempts)
	}
	c, err := s.svc.SetAccommodation(ctx, in)
	return reply(ctx, c, err, accommodationToProto)
}

func (s assignmentServer) ListAccommodations(ctx context.Context, req *connect.Request[v1.ListAccommodationsRequest]) (*connect.Response[v1.ListAccommodationsResponse], error) {
	m := req.Msg
	items, next, err := list(ctx, m.PageSize, m.PageToken, func(p paging.Page) ([]delivery.Accommodation, string, error) {
		return s.svc.Accommodations(ctx, m.AssignmentId, p)
	}, accommodationToProto)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&v1.ListAccommodationsResponse{Accommodations: items, NextPageToken: next}), nil
}

func (s assignmentServer) DeleteAccommodation(ctx context.Context, req *connect.Request[v1.DeleteAccommodationRequest]) (*connect.Response[emptypb.Empty], error) {
	return empty(ctx, s.svc.DeleteAccommodation(ctx, req.Msg.AssignmentId, req.Msg.UserId))
}

func (s assignmentServer) ListAssignmentAttempts(ctx context.Context, req *connect.Request[v1.ListAssignmentAttemptsRequest]) (*connect.Response[v1.ListAttemptsResponse], error) {
	m := req.Msg
	items, next, err := list(ctx, m.PageSize, m.PageToken, func(p paging.Page) ([]delivery.Attempt, string, error) {
		return s.svc.Attempts(ctx, m.AssignmentId, delivery.AttemptFilter{UserID: m.UserId, Status: m.Status}, p)
	}, attemptToProto)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&v1.ListAttemptsResponse{Attempts: items, NextPageToken: next}), nil
}

type attemptServer struct{ svc *delivery.Service }

var _ assessdv1connect.AttemptServiceHandler = attemptServer{}

func (s attemptServer) StartAttempt(ctx context.Context, req *connect.Request[v1.StartAttemptRequest]) (*connect.Response[v1.Attempt], error) {
	a, err := s.svc.StartAttempt(ctx, req.Msg.AssignmentId, req.Msg.UserId)
	return reply(ctx, a, err, attemptToProto)
}

func (s attemptServer) GetAttempt(ctx context.Context, req *connect.Request[v1.GetAttemptRequest]) (*connect.Response[v1.Attempt], error) {
	a, err := s.svc.Attempt(ctx, req.Msg.Id)
	return reply(ctx, a, err, attemptToProto)
}

func (s attemptServer) SaveAttemptResponse(ctx context.Context, req *connect.Request[v1.SaveAttemptResponseRequest]) (*connect.Response[v1.AttemptResponse], error) {
	m := req.Msg
	r, err := s.svc.SaveResponse(ctx, m.AttemptId, m.QuestionId, delivery.NewResponse{
		Value: m.Value.AsInterface(), Files: m.Files, ExpectedRevision: intOf(m.ExpectedRevision)})
	return reply(ctx, r, err, responseToProto)
}

func (s attemptServer) SubmitAttempt(ctx context.Context, req *connect.Request[v1.SubmitAttemptRequest]) (*connect.Response[v1.Attempt], error) {
	a, err := s.svc.SubmitAttempt(ctx, req.Msg.Id)
	return reply(ctx, a, err, attemptToProto)
}

// timeOf is t as a time, zero when unset.
func timeOf(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.AsTime()
}

func intOf(v *int32) *int {
	if v == nil {
		return nil
	}
	return new(int(*v))
}

// idList reads a replacement list of ids (a PATCH's classIds), nil when
// it was not sent.
func idList(field string, l *structpb.ListValue) (*[]string, error) {
	if l == nil {
		return nil, nil
	}
	out := make([]string, len(l.Values))
	for i, v := range l.Values {
		s, ok := v.Kind.(*structpb.Value_StringValue)
		if !ok {
			return nil, errs.Invalid(fmt.Sprintf("%s.%d", field, i), "must be a string")
		}
		out[i] = s.StringValue
	}
	return &out, nil
}

func assignmentToProto(a delivery.Assignment) *v1.Assignment {
	out := &v1.Assignment{
		Id: a.ID, ExamId: a.ExamID, ClassIds: a.ClassIDs, UserIds: a.UserIDs, OpensAt: ts(a.OpensAt), ClosesAt: ts(a.ClosesAt),
		TimeLimitMinutes: int32(a.TimeLimitMinutes), MaxAttempts: int32(a.MaxAttempts), ShuffleQuestions: a.ShuffleQuestions,
		ShuffleOptions: a.ShuffleOptions, GraceSeconds: int32(a.GraceSeconds), Overdue: a.Overdue, ShowResults: a.ShowResults,
		CreatedBy: a.CreatedBy, CreatedAt: ts(a.CreatedAt), UpdatedAt: ts(a.UpdatedAt),
	}
	if p := a.Progress; p != nil {
		out.Progress = &v1.AssignmentProgress{Assigned: int32(p.Assigned), NotStarted: int32(p.NotStarted),
			InProgress: int32(p.InProgress), Submitted: int32(p.Submitted), Discarded: int32(p.Discarded)}
	}
	return out
}

func accommodationToProto(c delivery.Accommodation) *v1.Accommodation {
	return &v1.Accommodation{AssignmentId: c.AssignmentID, UserId: c.UserID, ExtraTimePercent: int32(c.ExtraTimePercent),
		ExtraMinutes: int32(c.ExtraMinutes), ClosesAt: ts(c.ClosesAt), MaxAttempts: int32(c.MaxAttempts), UpdatedAt: ts(c.UpdatedAt)}
}

func attemptToProto(a delivery.Attempt) *v1.Attempt {
	out := &v1.Attempt{
		Id: a.ID, AssignmentId: a.AssignmentID, ExamId: a.ExamID, UserId: a.UserID, Number: int32(a.Number), Status: a.Status,
		StartedAt: ts(a.StartedAt), Deadline: ts(a.Deadline), GraceSeconds: int32(a.GraceSeconds), SubmittedAt: ts(a.SubmittedAt),
		SubmittedBy: a.SubmittedBy, ResultId: a.ResultID, ServerTime: ts(a.ServerTime),
		Questions: make([]*v1.AttemptQuestion, len(a.Questions)), Responses: make([]*v1.AttemptResponse, len(a.Responses)),
	}
	for i, q := range a.Questions {
		out.Questions[i] = &v1.AttemptQuestion{Id: q.ID, Type: q.Type, Prompt: q.Prompt, Points: q.Points, Config: sheetConfig(q)}
	}
	for i, r := range a.Responses {
		out.Responses[i] = responseToProto(r)
	}
	return out
}

// sheetConfig is what a student needs of a question's configuration to
// answer it: never the answer key.
func sheetConfig(q assessment.SheetQuestion) *structpb.Struct {
	c := map[string]any{}
	if len(q.Options) > 0 {
		options := make([]any, len(q.Options))
		for i, o := range q.Options {
			options[i] = map[string]any{"id": o.ID, "text": o.Text}
		}
		c["options"] = options
	}
	if q.MaxFiles > 0 {
		c["maxFiles"] = q.MaxFiles
	}
	if len(q.AcceptedTypes) > 0 {
		types := make([]any, len(q.AcceptedTypes))
		for i, t := range q.AcceptedTypes {
			types[i] = t
		}
		c["acceptedTypes"] = types
	}
	return toStruct(c)
}

func responseToProto(r delivery.Response) *v1.AttemptResponse {
	v, err := structpb.NewValue(r.Value)
	if err != nil {
		v = structpb.NewNullValue()
	}
	files := r.Files
	if files == nil {
		files = []string{}
	}
	return &v1.AttemptResponse{QuestionId: r.QuestionID, Value: v, Files: files, SavedAt: ts(r.SavedAt), Revision: int32(r.Revision)}
}
