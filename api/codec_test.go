package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/assessd/assessd/api/gen/assessd/v1"
	"github.com/assessd/assessd/internal/platform/apihttp"
)

// spacedResult is a result with nested messages, lists, JSON values and
// strings holding commas, spaces, quotes and backslashes.
func spacedResult(t testing.TB) *v1.Result {
	grading, err := structpb.NewStruct(map[string]any{"rationale": `right, "mostly" \ `, "skippedFiles": []any{map[string]any{"url": "x", "reason": "y"}}})
	if err != nil {
		t.Fatal(err)
	}
	return &v1.Result{Id: "res_1", ExamId: "exm_1", Status: "graded", Score: 1.5, SubmittedAt: timestamppb.Now(),
		Answers: []*v1.Answer{
			{QuestionId: "qst_1", Value: structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewNumberValue(1), structpb.NewStringValue("a, b\\")}}),
				Files: []string{"https://a", "https://b"}, Grading: grading, Feedback: "two ,  spaces"},
			{QuestionId: "qst_2", Value: structpb.NewNullValue()},
		}}
}

// TestMarshalCompactIsJSONCompact: the API's encoding of a message is
// protojson's with json.Compact applied, whatever spacing protojson chose
// in this build.
func TestMarshalCompactIsJSONCompact(t *testing.T) {
	msg := spacedResult(t)
	raw, err := marshalJSON.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, raw); err != nil {
		t.Fatal(err)
	}
	got, err := marshalCompact(msg)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() {
		t.Errorf("marshalCompact = %s, want %s", got, want.String())
	}
}

// BenchmarkCompact: apihttp.AppendCompact against json.Compact on a result's
// encoding with protojson's spaces.
func BenchmarkCompact(b *testing.B) {
	raw, err := marshalJSON.Marshal(spacedResult(b))
	if err != nil {
		b.Fatal(err)
	}
	spaced := bytes.ReplaceAll(raw, []byte(`,"`), []byte(`, "`)) // as a spacing build writes it
	b.Run("json.Compact", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			if err := json.Compact(&buf, spaced); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendCompact", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf, _ = apihttp.AppendCompact(buf[:0], spaced, nil)
		}
	})
}

// TestPlainHandlersWriteCompactJSON: the bodies of plain handlers are
// compact, like the transcoder's, whatever spacing protojson chooses in
// this build.
func TestPlainHandlersWriteCompactJSON(t *testing.T) {
	rec := httptest.NewRecorder()
	writeProtoJSON(rec, httptest.NewRequest(http.MethodPost, "/exam-imports", nil), &v1.ExamImport{Id: "imp_1", ExamId: "exm_1"})
	var compact bytes.Buffer
	if err := json.Compact(&compact, rec.Body.Bytes()); err != nil {
		t.Fatalf("%v in %s", err, rec.Body)
	}
	if compact.String() != rec.Body.String() {
		t.Errorf("body %s is not compact JSON", rec.Body)
	}
}
