package regeneration

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/testkit/replaytest"
	"github.com/assessd/assessd/workflows"
)

// historyFile is a recorded RegenerateQuestion history whose proposal the
// provider refused for good, so the regeneration failed with the reason.
// Record it with UPDATE_HISTORIES=1 go test ./workflows/regeneration -run TestRecordRegenerateQuestionHistory.
var historyFile = filepath.Join("testdata", "regenerate_question_history.json")

const refused = "the AI provider rejected the request"

func TestReplayRegenerateQuestion(t *testing.T) {
	h := replaytest.Load(t, historyFile, "RegenerateQuestion")
	var in Input
	h.Decode(h.Input, &in)
	if want := (Input{OrgID: "org_1", RegenerationID: "rgn_recorded", Region: "eu"}); in != want {
		t.Errorf("input %+v, want %+v", in, want)
	}
	want := []string{ActivityProposeQuestion, ActivityFailRegeneration}
	if !slices.Equal(h.Activities, want) {
		t.Fatalf("activities %v, want %v", h.Activities, want)
	}
	var fail FailInput
	h.Decode(h.ActivityInputs[1], &fail)
	var status string
	h.Decode(h.Result, &status)
	if fail.Error != refused || fail.Input != in || status != "failed" {
		t.Errorf("failed with %+v, result %q", fail, status)
	}
	h.Replay(RegenerateQuestion)
}

func TestRecordRegenerateQuestionHistory(t *testing.T) {
	propose := func(context.Context, Input) (ai.RegeneratedQuestion, error) {
		return ai.RegeneratedQuestion{}, temporal.NewNonRetryableApplicationError(refused, workflows.ErrTypeInvalidRequest, nil)
	}
	record := func(context.Context, RecordInput) (string, error) { return "ready", nil }
	fail := func(context.Context, FailInput) error { return nil }
	replaytest.Record(t, historyFile, Route(workflows.Subjects{}),
		outbox.Item{Kind: outbox.KindRegeneration, OrgID: "org_1", SubjectID: "rgn_recorded", Region: "eu"},
		map[string]any{ActivityProposeQuestion: propose, ActivityRecordProposal: record, ActivityFailRegeneration: fail})
}
