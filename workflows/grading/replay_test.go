package grading

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/testkit/devenvtest"
	"github.com/assessd/assessd/workflows"
)

// histories are recorded GradeResult histories (three answers, one retried
// after a transient error, one failing for good), oldest first: before
// localActivities, with PendingAnswers and FinishResult as activity tasks,
// and since. Record the newest with
// UPDATE_HISTORIES=1 go test ./workflows/grading -run TestRecordGradeResultHistory
// after an intended change to the workflow; a change that needs a new
// workflow version keeps the older files.
var histories = []struct {
	file  string
	local bool // PendingAnswers and FinishResult ran as local activities
}{
	{filepath.Join("testdata", "grade_result_history.json"), false},
	{filepath.Join("testdata", "grade_result_history_local.json"), true},
}

// TestReplayGradeResult checks that each recorded history is the one it
// claims to be (its workflow, input, activities and outcome decode into
// today's types), then replays it against the current workflow code: a
// change that is not deterministic fails here instead of in production,
// where running workflows would get stuck.
func TestReplayGradeResult(t *testing.T) {
	for _, h := range histories {
		t.Run(filepath.Base(h.file), func(t *testing.T) { replayHistory(t, h.file, h.local) })
	}
}

func replayHistory(t *testing.T, file string, local bool) {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	history, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dc := converter.GetDefaultDataConverter()
	decode := func(p *commonpb.Payloads, v any) {
		t.Helper()
		if err := dc.FromPayloads(p, v); err != nil {
			t.Fatal(err)
		}
	}
	var (
		in         Input
		activities []string
		localRuns  []string
		finish     FinishInput
		out        Outcome
	)
	for _, e := range history.GetEvents() {
		switch e.GetEventType() {
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			a := e.GetWorkflowExecutionStartedEventAttributes()
			if a.GetWorkflowType().GetName() != "GradeResult" {
				t.Fatalf("the history is of workflow %s", a.GetWorkflowType().GetName())
			}
			decode(a.GetInput(), &in)
		case enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := e.GetActivityTaskScheduledEventAttributes()
			activities = append(activities, a.GetActivityType().GetName())
			if a.GetActivityType().GetName() == ActivityFinishResult {
				decode(a.GetInput(), &finish)
			}
		case enums.EVENT_TYPE_MARKER_RECORDED:
			a := e.GetMarkerRecordedEventAttributes()
			if a.GetMarkerName() == "LocalActivity" {
				var marker struct{ ActivityType string }
				decode(a.GetDetails()["data"], &marker)
				localRuns = append(localRuns, marker.ActivityType)
			}
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			decode(e.GetWorkflowExecutionCompletedEventAttributes().GetResult(), &out)
		}
	}
	if want := (Input{OrgID: "org_1", ResultID: "res_recorded", Region: "eu"}); in != want {
		t.Errorf("input %+v, want %+v", in, want)
	}
	rejected := "the AI provider rejected the request"
	grades := []string{ActivityGradeAnswer, ActivityGradeAnswer, ActivityGradeAnswer}
	if local {
		if want := []string{ActivityPendingAnswers, ActivityFinishResult}; !slices.Equal(localRuns, want) || !slices.Equal(activities, grades) {
			t.Errorf("local activities %v and activity tasks %v, want %v and %v", localRuns, activities, want, grades)
		}
	} else {
		want := append(append([]string{ActivityPendingAnswers}, grades...), ActivityFinishResult)
		if !slices.Equal(activities, want) || len(localRuns) != 0 {
			t.Errorf("activities %v (local %v), want %v", activities, localRuns, want)
		}
		if len(finish.Failures) != 1 || finish.Failures[0] != (AnswerFailure{AnswerID: "a3", Reason: rejected}) || finish.ResultID != "res_recorded" {
			t.Errorf("FinishResult input %+v, want the one rejected answer a3", finish)
		}
	}
	if out.Status != "failed" || out.Reason != rejected {
		t.Errorf("outcome %+v", out)
	}

	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflow(GradeResult)
	if err := replayer.ReplayWorkflowHistory(nil, history); err != nil {
		t.Fatalf("the grading workflow no longer replays its recorded history: %v", err)
	}
}

func TestRecordGradeResultHistory(t *testing.T) {
	if os.Getenv("UPDATE_HISTORIES") == "" {
		t.Skip("set UPDATE_HISTORIES=1 to record the replay test's history")
	}
	ctx := context.Background()
	c := devenvtest.Temporal(t)
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
	in := Input{OrgID: "org_1", ResultID: "res_recorded", Region: "eu"}
	it := outbox.Item{Kind: outbox.KindGrading, OrgID: in.OrgID, SubjectID: in.ResultID, Region: in.Region}
	if err := workflows.Start(ctx, c, Route(nil), it); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := c.GetWorkflow(waitCtx, Route(nil).WorkflowID(in.ResultID), "").Get(waitCtx, nil); err != nil {
		t.Fatal(err)
	}
	history := &historypb.History{}
	iter := c.GetWorkflowHistory(ctx, Route(nil).WorkflowID(in.ResultID), "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
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
	if err := os.WriteFile(histories[len(histories)-1].file, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
