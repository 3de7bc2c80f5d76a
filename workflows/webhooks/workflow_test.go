package webhooks

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
)

// fakeDelivery is an event with two endpoints: "ok" accepts from its
// third attempt, "down" never does.
type fakeDelivery struct {
	mu       sync.Mutex
	attempts map[string]int
	gaveUp   []GiveUpInput
}

func (f *fakeDelivery) PendingWebhookTargets(context.Context, Input) ([]string, error) {
	return []string{"ok", "down"}, nil
}

func (f *fakeDelivery) DeliverWebhook(ctx context.Context, in TargetInput) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	attempt := in.Before + int(activity.GetInfo(ctx).Attempt)
	f.attempts[in.EndpointID] = attempt
	if in.EndpointID == "ok" && attempt >= 3 {
		return nil
	}
	return errors.New("webhook delivery failed: the endpoint answered 503")
}

func (f *fakeDelivery) GiveUpWebhook(_ context.Context, in GiveUpInput) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gaveUp = append(f.gaveUp, in)
	return nil
}

// TestDeliverEventRetriesThenGivesUp: a failing endpoint is retried with
// backoff for the window, one that recovers is delivered, and only the one
// that never recovered is given up on.
func TestDeliverEventRetriesThenGivesUp(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(DeliverEvent)
	f := &fakeDelivery{attempts: map[string]int{}}
	env.RegisterActivityWithOptions(f.PendingWebhookTargets, activity.RegisterOptions{Name: ActivityPendingTargets})
	env.RegisterActivityWithOptions(f.DeliverWebhook, activity.RegisterOptions{Name: ActivityDeliver})
	env.RegisterActivityWithOptions(f.GiveUpWebhook, activity.RegisterOptions{Name: ActivityGiveUp})
	env.ExecuteWorkflow(DeliverEvent, Input{OrgID: "org_1", EventID: "msg_1", Region: "eu", Retry: DefaultRetry})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var delivered int
	if err := env.GetWorkflowResult(&delivered); err != nil || delivered != 1 {
		t.Fatalf("delivered %d, %v", delivered, err)
	}
	if f.attempts["ok"] != 3 {
		t.Fatalf("ok took %d attempts, want 3", f.attempts["ok"])
	}
	// The test environment caps unlimited retries at 10 attempts; the
	// server retries for the whole ScheduleToClose window (about 32 in a day).
	if n := f.attempts["down"]; n < 10 {
		t.Fatalf("down was tried %d times", n)
	}
	if len(f.gaveUp) != 1 || f.gaveUp[0].EndpointID != "down" || f.gaveUp[0].Reason != (24*time.Hour).String() {
		t.Fatalf("gave up %+v", f.gaveUp)
	}
}
