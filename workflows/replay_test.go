package workflows

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/assessd/assessd/devenv"
	"github.com/assessd/assessd/outbox"
)

// historyFile is a recorded GradeResult history (three answers, one retried
// after a transient error, one failing for good). Regenerate it with
// UPDATE_HISTORIES=1 go test ./workflows -run TestRecordGradeResultHistory
// after an intended change to the workflow.
var historyFile = filepath.Join("testdata", "grade_result_history.json")

// TestReplayGradeResult replays the recorded history against the current
// workflow code: a change that is not deterministic fails here instead of
// in production, where running workflows would get stuck.
func TestReplayGradeResult(t *testing.T) {
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflow(GradeResult)
	if err := replayer.ReplayWorkflowHistoryFromJSONFile(nil, historyFile); err != nil {
		t.Fatalf("the grading workflow no longer replays its recorded history: %v", err)
	}
}

func TestRecordGradeResultHistory(t *testing.T) {
	if os.Getenv("UPDATE_HISTORIES") == "" {
		t.Skip("set UPDATE_HISTORIES=1 to record the replay test's history")
	}
	ctx := context.Background()
	server, err := devenv.StartTemporal(ctx, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Stop()
	c, err := devenv.DialTemporal(server.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := &fakeGrading{pending: []string{"a1", "a2", "a3"}, failOnce: map[string]bool{"a2": true}, invalid: map[string]bool{"a3": true}}
	w := worker.New(c, "grading-eu", worker.Options{})
	w.RegisterWorkflow(GradeResult)
	w.RegisterActivityWithOptions(f.PendingAnswers, activity.RegisterOptions{Name: ActivityPendingAnswers})
	w.RegisterActivityWithOptions(f.GradeAnswer, activity.RegisterOptions{Name: ActivityGradeAnswer})
	w.RegisterActivityWithOptions(f.FinishResult, activity.RegisterOptions{Name: ActivityFinishResult})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	in := GradeResultInput{OrgID: "org_1", ResultID: "res_recorded", Region: "eu"}
	it := outbox.Item{Kind: outbox.KindGrading, OrgID: in.OrgID, SubjectID: in.ResultID, Region: in.Region}
	if err := Start(ctx, c, GradingRoute(nil), it); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := c.GetWorkflow(waitCtx, WorkflowID(in.ResultID), "").Get(waitCtx, nil); err != nil {
		t.Fatal(err)
	}
	history := &historypb.History{}
	iter := c.GetWorkflowHistory(ctx, WorkflowID(in.ResultID), "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		event, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		history.Events = append(history.Events, event)
	}
	data, err := protojson.MarshalOptions{Indent: "  "}.Marshal(history)
	if err != nil {
		t.Fatal(err)
	}
	var check map[string]any
	if err := json.Unmarshal(data, &check); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(historyFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
