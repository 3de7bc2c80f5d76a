package pbjson

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
)

// result is a submission's response: a result of ten answers scored by
// rules.
func result() *v1.Result {
	at := timestamppb.New(time.Date(2026, 11, 26, 16, 4, 5, 123_000_000, time.UTC))
	r := &v1.Result{Id: "res_01JDQ4Z9V6S8K2M3N4P5Q6R7S8", ExamId: "exm_01JDQ4Z9V6S8K2M3N4P5Q6R7S8", UserId: "usr_01JDQ4Z9V6S8K2M3N4P5Q6R7S8",
		Status: "graded", Score: 7, MaxScore: 10, SubmittedAt: at, GradedAt: at, Region: "global", Source: "api"}
	for range 10 {
		r.Answers = append(r.Answers, &v1.Answer{QuestionId: "qst_01JDQ4Z9V6S8K2M3N4P5Q6R7S8", Value: structpb.NewBoolValue(true),
			Status: "graded", Score: 1, MaxScore: 1, GradedAt: at, QuestionRevision: 1})
	}
	return r
}

// user is GET /users/{id}'s response for a user with eight metadata keys.
func user() *v1.User {
	at := timestamppb.New(time.Date(2026, 11, 26, 16, 4, 5, 123_000_000, time.UTC))
	meta, _ := structpb.NewStruct(map[string]any{"grade": "7", "class": "7b", "house": "red", "sis_id": "S-20931",
		"year": 2026.0, "active": true, "locale": "nb-NO", "homeroom": "Ms. Berg"})
	return &v1.User{Id: "usr_01JDQ4Z9V6S8K2M3N4P5Q6R7S8", OrgId: "org_01JDQ4Z9V6S8K2M3N4P5Q6R7S8", Email: "ada@school.example",
		Name: "Ada", Role: "student", Metadata: meta, CreatedAt: at, UpdatedAt: at}
}

func page() *v1.ListResultsResponse {
	l := &v1.ListResultsResponse{NextPageToken: "v1:01JDQ4Z9V6S8K2M3N4P5Q6R7S8"}
	for range 100 {
		l.Results = append(l.Results, result())
	}
	return l
}

// BenchmarkJSON compares Append with protojson (the baseline) on a
// submission's response, a user with metadata and a page of 100 results.
func BenchmarkJSON(b *testing.B) {
	for _, c := range []struct {
		name string
		msg  proto.Message
	}{{"result", result()}, {"user", user()}, {"page100", page()}} {
		b.Run(c.name+"/protojson", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := reference.Marshal(c.msg); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/pbjson", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := Append(nil, c.msg); !ok {
					b.Fatal("declined")
				}
			}
		})
	}
}
