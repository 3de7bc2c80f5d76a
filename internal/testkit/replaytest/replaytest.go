// Package replaytest keeps workflow histories recorded on a real Temporal
// dev server and replays them against today's workflow code, so a change
// that is not deterministic fails a test instead of stranding running
// workflows in production.
//
// A workflow package records its history with Record, under
// UPDATE_HISTORIES=1, after an intended change to the workflow; a change
// that needs a new workflow version keeps the older files and records a
// new one.
package replaytest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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

// Record starts the outbox row it through route on a dev server, with a
// worker on its region's queue running activities (by registered name),
// waits for the workflow and writes its history to file. It runs only with
// UPDATE_HISTORIES=1.
func Record(t *testing.T, file string, route workflows.Route, it outbox.Item, activities map[string]any) {
	t.Helper()
	if os.Getenv("UPDATE_HISTORIES") == "" {
		t.Skip("set UPDATE_HISTORIES=1 to record the replay test's history")
	}
	ctx := context.Background()
	c := devenvtest.Temporal(t)
	queue, err := workflows.RegionTaskQueue(it.Region)
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflow(route.Workflow)
	for name, fn := range activities {
		w.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := workflows.Start(ctx, c, route, it); err != nil {
		t.Fatal(err)
	}
	id := route.WorkflowID(it.SubjectID)
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := c.GetWorkflow(waitCtx, id, "").Get(waitCtx, nil); err != nil {
		t.Fatal(err)
	}
	history := &historypb.History{}
	iter := c.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
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
	// protojson varies its spacing; the committed file is stable JSON.
	var stable any
	if err := json.Unmarshal(data, &stable); err != nil {
		t.Fatal(err)
	}
	if data, err = json.MarshalIndent(stable, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// History is a recorded history and what it says.
type History struct {
	t      *testing.T
	events *historypb.History
	// Input is the workflow's input payload, Result its result (nil unless
	// it completed).
	Input, Result *commonpb.Payloads
	// Activities are the activity types scheduled as tasks, in order, and
	// LocalActivities those run as local activities.
	Activities, LocalActivities []string
	// ActivityInputs are the inputs of the scheduled activity tasks, in
	// the order of Activities.
	ActivityInputs []*commonpb.Payloads
	// SearchAttributeUpserts counts the run's search attribute upserts
	// (GetVersion makes one: a visibility write each).
	SearchAttributeUpserts int
}

// Load reads a recorded history of workflowType.
func Load(t *testing.T, file, workflowType string) *History {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }() // read only
	events, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := &History{t: t, events: events}
	for _, e := range events.GetEvents() {
		switch e.GetEventType() {
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			a := e.GetWorkflowExecutionStartedEventAttributes()
			if got := a.GetWorkflowType().GetName(); got != workflowType {
				t.Fatalf("%s is a history of workflow %s, not %s", file, got, workflowType)
			}
			h.Input = a.GetInput()
		case enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := e.GetActivityTaskScheduledEventAttributes()
			h.Activities = append(h.Activities, a.GetActivityType().GetName())
			h.ActivityInputs = append(h.ActivityInputs, a.GetInput())
		case enums.EVENT_TYPE_MARKER_RECORDED:
			a := e.GetMarkerRecordedEventAttributes()
			if a.GetMarkerName() == "LocalActivity" {
				var marker struct{ ActivityType string }
				h.Decode(a.GetDetails()["data"], &marker)
				h.LocalActivities = append(h.LocalActivities, marker.ActivityType)
			}
		case enums.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			h.SearchAttributeUpserts++
		case enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			h.Result = e.GetWorkflowExecutionCompletedEventAttributes().GetResult()
		}
	}
	return h
}

// Decode decodes a payload of the history into v, today's type of it: a
// type change the history can no longer decode fails the test.
func (h *History) Decode(p *commonpb.Payloads, v any) {
	h.t.Helper()
	if err := converter.GetDefaultDataConverter().FromPayloads(p, v); err != nil {
		h.t.Fatal(err)
	}
}

// SetInput replaces the workflow's input with v: a history that differs
// from a recorded one only in what its starter sent, such as a run a newer
// release started and an older worker took.
func (h *History) SetInput(v any) {
	h.t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayloads(v)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, e := range h.events.GetEvents() {
		if a := e.GetWorkflowExecutionStartedEventAttributes(); a != nil {
			a.Input, h.Input = p, p
		}
	}
}

// Replay replays the history against workflow, today's code.
func (h *History) Replay(workflow any) {
	h.t.Helper()
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflow(workflow)
	if err := replayer.ReplayWorkflowHistory(nil, h.events); err != nil {
		h.t.Fatalf("the workflow no longer replays its recorded history: %v", err)
	}
}
