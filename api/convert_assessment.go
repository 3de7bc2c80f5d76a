package api

import (
	"google.golang.org/protobuf/types/known/structpb"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/internal/assessment"
)

func folderToProto(f assessment.Folder) *v1.Folder {
	return &v1.Folder{Id: f.ID, ParentId: f.ParentID, Name: f.Name, CreatedAt: ts(f.CreatedAt), UpdatedAt: ts(f.UpdatedAt)}
}

func examToProto(e assessment.Exam) *v1.Exam {
	return &v1.Exam{
		Id: e.ID, FolderId: e.FolderID, Name: e.Name, Description: e.Description, Language: e.Language,
		DurationMinutes: int32(e.DurationMinutes), QuestionCount: int32(e.QuestionCount),
		CreatedAt: ts(e.CreatedAt), UpdatedAt: ts(e.UpdatedAt),
	}
}

func questionToProto(q assessment.Question) *v1.Question {
	out := &v1.Question{
		Id: q.ID, ExamId: q.ExamID, Position: int32(q.Position), Type: q.Type, Prompt: q.Prompt,
		Config: toStruct(q.Config), Points: q.Points, TypeStatus: &v1.TypeStatus{State: "OK"},
		CreatedAt: ts(q.CreatedAt), UpdatedAt: ts(q.UpdatedAt), Revision: int32(q.Revision),
	}
	if q.Def != nil {
		out.TypeDefinition = typeToProto(*q.Def)
	} else {
		u := assessment.Unresolved
		out.TypeStatus = &v1.TypeStatus{State: "FAILED_PRECONDITION", Reason: u.Reason, Message: u.Message}
	}
	return out
}

func typeToProto(t assessment.TypeDef) *v1.QuestionType {
	return &v1.QuestionType{
		Id: t.Ref(), OrgId: t.OrgID, Key: t.Key, Name: t.Name, Description: t.Description,
		ConfigSchema:       toStruct(t.ConfigSchema),
		ResponseProcessing: &v1.ResponseProcessing{Condition: t.Condition},
		Grading:            &v1.Grading{Enabled: t.GradingEnabled, FileInputs: t.FileInputs},
		Public:             t.Public, Deprecated: t.Deprecated, BuiltIn: t.BuiltIn, Owned: t.Owned, Enabled: t.Enabled,
		CreatedAt: ts(t.CreatedAt), UpdatedAt: ts(t.UpdatedAt),
	}
}

func resultToProto(r assessment.Result) *v1.Result {
	out := &v1.Result{
		Id: r.ID, ExamId: r.ExamID, UserId: r.UserID, Status: r.Status, Score: r.Score, MaxScore: r.MaxScore,
		Reason: r.Reason, Region: r.Region, Source: r.Source, AttemptId: r.AttemptID, AssignmentId: r.AssignmentID, SubmittedAt: ts(r.SubmittedAt), GradedAt: ts(r.GradedAt),
		Answers: make([]*v1.Answer, len(r.Answers)),
	}
	for i, a := range r.Answers {
		v, err := structpb.NewValue(a.Value)
		if err != nil {
			v = structpb.NewNullValue()
		}
		out.Answers[i] = &v1.Answer{
			QuestionId: a.QuestionID, Value: v, Files: a.Files, Status: a.Status, Score: a.Score,
			MaxScore: a.MaxScore, Feedback: a.Feedback, Grading: optionalStruct(a.Grading), GradedAt: ts(a.GradedAt),
			QuestionRevision: int32(a.QuestionRevision),
			NeedsReview:      a.NeedsReview,
		}
	}
	return out
}

func summaryToProto(s assessment.Summary) *v1.ResultsSummary {
	out := &v1.ResultsSummary{
		ExamId: s.ExamID, Count: int32(s.Count), GradedCount: int32(s.GradedCount), Mean: s.Mean, Median: s.Median,
		StdDev: s.StdDev, Min: s.Min, Max: s.Max,
	}
	for _, b := range s.Histogram {
		out.Histogram = append(out.Histogram, &v1.HistogramBucket{FromPercent: b.FromPercent, ToPercent: b.ToPercent, Count: int32(b.Count)})
	}
	for _, q := range s.Questions {
		out.Questions = append(out.Questions, &v1.QuestionSummary{QuestionId: q.QuestionID, Responses: int32(q.Responses),
			MeanScore: q.MeanScore, Difficulty: q.Difficulty, Discrimination: q.Discrimination})
	}
	return out
}

func qualityToProto(r assessment.QualityReport) *v1.QuestionQuality {
	out := &v1.QuestionQuality{QuestionId: r.QuestionID, Score: int32(r.Score), ReadabilityGrade: r.ReadabilityGrade}
	for _, f := range r.Findings {
		out.Findings = append(out.Findings, &v1.QualityFinding{Code: f.Code, Severity: f.Severity, Message: f.Message, Field: f.Field})
	}
	if r.Stats != nil {
		out.Statistics = &v1.ItemStatistics{Responses: int32(r.Stats.Responses), Difficulty: r.Stats.Difficulty,
			Discrimination: r.Stats.Discrimination}
	}
	return out
}
