package api

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
)

func TestMessageProblemNamesPublicFields(t *testing.T) {
	nested := structpb.NewNullValue()
	for range maxValueDepth + 2 {
		nested = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{nested}})
	}
	for _, tc := range []struct {
		name      string
		msg       *v1.SubmitResultRequest
		field     string
		wantClean bool
	}{
		{"clean", &v1.SubmitResultRequest{ExamId: "exm_1", Answers: []*v1.SubmittedAnswer{{QuestionId: "qst_1", Value: structpb.NewStringValue("ok")}}}, "", true},
		{"NUL in a path id", &v1.SubmitResultRequest{ExamId: "exm_\x00"}, "examId", false},
		{"NUL in a list", &v1.SubmitResultRequest{Answers: []*v1.SubmittedAnswer{{}, {QuestionId: "q\x00"}}}, "answers[1].questionId", false},
		{"NUL in a free-form value", &v1.SubmitResultRequest{Answers: []*v1.SubmittedAnswer{{Value: structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"a": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewStringValue("x\x00")}})}})}}}, "answers[0].value.a[0]", false},
		{"NUL in a free-form key", &v1.SubmitResultRequest{Answers: []*v1.SubmittedAnswer{{Value: structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"k\x00": structpb.NewNullValue()}})}}}, "answers[0].value", false},
		{"invalid UTF-8", &v1.SubmitResultRequest{UserId: "\xff"}, "userId", false},
		{"not finite", &v1.SubmitResultRequest{Answers: []*v1.SubmittedAnswer{{Value: structpb.NewNumberValue(inf())}}}, "answers[0].value", false},
		{"too deep", &v1.SubmitResultRequest{Answers: []*v1.SubmittedAnswer{{Value: nested}}}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			field, problem := requestProblem(tc.msg.ProtoReflect())
			if (problem == "") != tc.wantClean || (tc.field != "" && field != tc.field) {
				t.Fatalf("requestProblem = %q, %q; want field %q", field, problem, tc.field)
			}
		})
	}
}

func inf() float64 { var z float64; return 1 / z }

// FuzzMessageProblem decodes arbitrary JSON as a user with metadata: a
// message the validator passes must be storable, that is encodable as JSON
// without NUL characters.
func FuzzMessageProblem(f *testing.F) {
	for _, s := range []string{`{"name":"Ada","metadata":{"grade":"8"}}`, `{"metadata":{"a":"\u0000"}}`, `{"metadata":{"\u0000":1}}`,
		`{"name":"a\u0000"}`, `{"metadata":{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}`, `{"metadata":{"n":1e308}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msg := &v1.CreateUserRequest{}
		if err := (protojson.UnmarshalOptions{}).Unmarshal(data, msg); err != nil {
			return
		}
		if _, problem := requestProblem(msg.ProtoReflect()); problem != "" {
			return
		}
		out, err := protojson.Marshal(msg)
		if err != nil {
			t.Fatalf("passed %q but cannot encode it: %v", data, err)
		}
		if bytes.Contains(out, []byte(`\u0000`)) {
			t.Fatalf("passed %q with a NUL", data)
		}
	})
}
