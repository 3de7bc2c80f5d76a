package api

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoregistry"
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

// FuzzBodyError checks that whatever a client sends, a body the REST codec
// refuses is a 400 whose message is printable and names no internal type.
func FuzzBodyError(f *testing.F) {
	for _, s := range []string{``, `{`, `{"name":1}`, `{"metadata":{"a":1e400}}`, "{\"name\":\"\xff\"}", `{"unknown":1}`, `[]`, `{"metadata":[]}`} {
		f.Add([]byte(s))
	}
	codec := newRESTJSON(protoregistry.GlobalTypes)
	f.Fuzz(func(t *testing.T, data []byte) {
		err := codec.Unmarshal(data, &v1.CreateUserRequest{})
		if err == nil {
			return
		}
		var ce *connect.Error
		if !errors.As(err, &ce) || ce.Code() != connect.CodeInvalidArgument {
			t.Fatalf("%q: %v is not InvalidArgument", data, err)
		}
		if !utf8.ValidString(ce.Message()) || strings.ContainsRune(ce.Message(), 0) || leaksInternals(ce.Message()) {
			t.Fatalf("%q: message %q", data, ce.Message())
		}
	})
}

var upperSnake = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

func reasonOf(ce *connect.Error) string {
	for _, d := range ce.Details() {
		if v, err := d.Value(); err == nil {
			if info, ok := v.(*errdetails.ErrorInfo); ok {
				return info.Reason
			}
		}
	}
	return ""
}

// FuzzShapeError checks that any error response of the REST surface comes
// out with an ErrorInfo and a message free of internal names.
func FuzzShapeError(f *testing.F) {
	f.Add("GET", "/users", 400, "application/json", []byte(`{"code":3,"message":"invalid parameter \"page_size\" value for type \"int32\": abc"}`))
	f.Add("GET", "/audit-logs", 400, "application/json", []byte(`{"code":3,"message":"invalid parameter \"since\" value for type \"message\": \"x\""}`))
	f.Add("POST", "/users", 500, "application/json", []byte(`{"code":2,"message":"proto: field assessd.v1.CreateUserRequest.name contains invalid UTF-8"}`))
	f.Add("DELETE", "/exams", 405, "text/plain", []byte("Method Not Allowed\n"))
	f.Add("GET", "/exams", 418, "text/plain", []byte("I'm a teapot"))
	f.Add("GET", "/exams/x", 400, "application/json", []byte(`{"code":3,"message":"in field path \"a.b\": field of type assessd.v1.X"}`))
	f.Fuzz(func(t *testing.T, method, path string, code int, contentType string, body []byte) {
		if code < 400 || code > 599 {
			return
		}
		ce := ShapeError(context.Background(), method, path, code, contentType, body)
		if ce == nil {
			return // the body already carries an ErrorInfo
		}
		var info bool
		for _, d := range ce.Details() {
			v, err := d.Value()
			if _, ok := v.(*errdetails.ErrorInfo); ok && err == nil {
				info = true
			}
		}
		if !info || !upperSnake.MatchString(reasonOf(ce)) || ce.Message() == "" || leaksInternals(ce.Message()) || (code >= 500 && ce.Code() != connect.CodeInternal) {
			t.Fatalf("ShapeError(%q %q %d %q) = %v", method, path, code, body, ce)
		}
	})
}
