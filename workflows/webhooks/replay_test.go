package webhooks

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/testkit/replaytest"
	"github.com/assessd/assessd/workflows"
)

// historyFile is a recorded DeliverEvent history of an event for three
// endpoints: "ok" accepts the first attempt, "flaky" the activity task's
// after the first attempt failed, "gone" refuses for good and is given up
// on. Record it with
// UPDATE_HISTORIES=1 go test ./workflows/webhooks -run TestRecordDeliverEventHistory.
var historyFile = filepath.Join("testdata", "deliver_event_history.json")

// recordedRetry keeps the recording short; the history carries it.
var recordedRetry = Retry{Initial: 100 * time.Millisecond, Window: time.Minute}

func TestReplayDeliverEvent(t *testing.T) {
	h := replaytest.Load(t, historyFile, "DeliverEvent")
	var in Input
	h.Decode(h.Input, &in)
	if want := (Input{OrgID: "org_1", EventID: "msg_recorded", Region: "eu", Retry: recordedRetry}); in != want {
		t.Errorf("input %+v, want %+v", in, want)
	}
	local := []string{ActivityPendingTargets, ActivityDeliver, ActivityDeliver, ActivityDeliver}
	tasks := slices.Sorted(slices.Values(h.Activities))
	if !slices.Equal(h.LocalActivities, local) || !slices.Equal(tasks, []string{ActivityDeliver, ActivityGiveUp}) {
		t.Fatalf("local activities %v and activity tasks %v, want %v and one %s and one %s",
			h.LocalActivities, h.Activities, local, ActivityDeliver, ActivityGiveUp)
	}
	var delivered int
	h.Decode(h.Result, &delivered)
	if delivered != 2 {
		t.Errorf("delivered %d, want 2 (ok and flaky)", delivered)
	}
	h.Replay(DeliverEvent)
}

func TestRecordDeliverEventHistory(t *testing.T) {
	targets := func(context.Context, Input) ([]string, error) { return []string{"ok", "flaky", "gone"}, nil }
	deliver := func(_ context.Context, in TargetInput) error {
		switch {
		case in.EndpointID == "gone":
			return temporal.NewNonRetryableApplicationError("the endpoint answered 410", workflows.ErrTypeInvalidRequest, nil)
		case in.EndpointID == "flaky" && in.Before == 0:
			return errors.New("webhook delivery failed: the endpoint answered 503")
		}
		return nil
	}
	giveUp := func(context.Context, GiveUpInput) error { return nil }
	replaytest.Record(t, historyFile, Route(recordedRetry, workflows.Subjects{}),
		outbox.Item{Kind: outbox.KindWebhook, OrgID: "org_1", SubjectID: "msg_recorded", Region: "eu"},
		map[string]any{ActivityPendingTargets: targets, ActivityDeliver: deliver, ActivityGiveUp: giveUp})
}
