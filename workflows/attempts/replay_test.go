package attempts

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/testkit/replaytest"
	"github.com/assessd/assessd/workflows"
)

// historyFile is a recorded KeepDeadline history of an attempt open for a
// second, extended by another second while the workflow slept, then
// submitted. Record it with
// UPDATE_HISTORIES=1 go test ./workflows/attempts -run TestRecordKeepDeadlineHistory.
var historyFile = filepath.Join("testdata", "keep_deadline_history.json")

func TestReplayKeepDeadline(t *testing.T) {
	h := replaytest.Load(t, historyFile, "KeepDeadline")
	var in Input
	h.Decode(h.Input, &in)
	if want := (Input{OrgID: "org_1", AttemptID: "att_recorded", Region: "eu"}); in != want {
		t.Errorf("input %+v, want %+v", in, want)
	}
	if want := []string{ActivityCloseAttempt, ActivityCloseAttempt, ActivityCloseAttempt}; !slices.Equal(h.LocalActivities, want) || len(h.Activities) != 0 {
		t.Fatalf("local activities %v and activity tasks %v, want %v and none", h.LocalActivities, h.Activities, want)
	}
	var status string
	h.Decode(h.Result, &status)
	if status != "submitted" {
		t.Errorf("status %q, want submitted", status)
	}
	h.Replay(KeepDeadline)
}

func TestRecordKeepDeadlineHistory(t *testing.T) {
	var calls int
	closeAttempt := func(context.Context, Input) (Closing, error) {
		calls++
		if calls == 3 {
			return Closing{Closed: true, Status: "submitted"}, nil
		}
		return Closing{Until: time.Now().Add(time.Second)}, nil
	}
	replaytest.Record(t, historyFile, Route(workflows.Subjects{}),
		outbox.Item{Kind: outbox.KindAttempt, OrgID: "org_1", SubjectID: "att_recorded", Region: "eu"},
		map[string]any{ActivityCloseAttempt: closeAttempt})
}
