package generation

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"go.temporal.io/sdk/activity"

	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/testkit/replaytest"
	"github.com/assessd/assessd/workflows"
)

// historyFile is a recorded GenerateExam history: questions generated on
// the second attempt, the exam created, the generation finished. Record it
// with UPDATE_HISTORIES=1 go test ./workflows/generation -run TestRecordGenerateExamHistory.
var historyFile = filepath.Join("testdata", "generate_exam_history.json")

func TestReplayGenerateExam(t *testing.T) {
	h := replaytest.Load(t, historyFile, "GenerateExam")
	var in Input
	h.Decode(h.Input, &in)
	if want := (Input{OrgID: "org_1", GenerationID: "gen_recorded", Region: "eu"}); in != want {
		t.Errorf("input %+v, want %+v", in, want)
	}
	want := []string{ActivityGenerateQuestions, ActivityCreateExam, ActivityFinishGeneration}
	if !slices.Equal(h.Activities, want) {
		t.Fatalf("activities %v, want %v", h.Activities, want)
	}
	var finish FinishInput
	h.Decode(h.ActivityInputs[2], &finish)
	var examID string
	h.Decode(h.Result, &examID)
	if finish.ExamID != "exm_recorded" || finish.Error != "" || examID != "exm_recorded" {
		t.Errorf("finished %+v, result %q", finish, examID)
	}
	h.Replay(GenerateExam)
}

func TestRecordGenerateExamHistory(t *testing.T) {
	generate := func(ctx context.Context, _ Input) ([]ai.GeneratedQuestion, error) {
		if activity.GetInfo(ctx).Attempt == 1 {
			return nil, errors.New("provider timeout")
		}
		return []ai.GeneratedQuestion{{Type: "true_false", Prompt: "Water boils at 100 °C at sea level.", Points: 1,
			Config: map[string]any{"correct": true}}}, nil
	}
	create := func(context.Context, Input, []ai.GeneratedQuestion) (string, error) { return "exm_recorded", nil }
	finish := func(context.Context, FinishInput) error { return nil }
	replaytest.Record(t, historyFile, Route(workflows.Subjects{}),
		outbox.Item{Kind: outbox.KindGeneration, OrgID: "org_1", SubjectID: "gen_recorded", Region: "eu"},
		map[string]any{ActivityGenerateQuestions: generate, ActivityCreateExam: create, ActivityFinishGeneration: finish})
}
