// Package webhooks is the webhook delivery workflow: DeliverEvent sends one
// recorded event to every endpoint it is pending for, retrying each with
// exponential backoff for a day, and disables an endpoint that never
// accepted it. Its activities are in activities/webhooks; it is started
// from the outbox (Route) on the task queue of the organization's region,
// so an EU organization's payloads leave from EU workers (decision 0108).
package webhooks

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/workflows"
)

// Activity names, registered by the worker (activities/webhooks). They are
// part of recorded histories: renaming one breaks running workflows.
const (
	ActivityPendingTargets = "PendingWebhookTargets"
	ActivityDeliver        = "DeliverWebhook"
	ActivityGiveUp         = "GiveUpWebhook"
)

// Retry is the delivery schedule of one endpoint: attempts start Initial
// apart, doubling up to an hour, for Window.
type Retry struct {
	Initial time.Duration
	Window  time.Duration
}

// DefaultRetry retries for a day, the first retry after 5 seconds.
var DefaultRetry = Retry{Initial: 5 * time.Second, Window: 24 * time.Hour}

// Input identifies an event to deliver; it is the workflow's input.
type Input struct {
	OrgID   string
	EventID string
	Region  string
	Retry   Retry
}

// TargetInput is one endpoint of an event (DeliverWebhook). Before counts
// the attempts made before this activity's own, so the recorded attempt
// numbers run on from the first attempt, made as a local activity.
type TargetInput struct {
	Input
	EndpointID string
	Before     int
}

// GiveUpInput ends an endpoint's delivery (GiveUpWebhook).
type GiveUpInput struct {
	TargetInput
	Reason string
}

// Route is how an outbox webhook row becomes a DeliverEvent workflow, with
// id "webhook-<event id>"; an event is unfinished while an endpoint's
// delivery is pending, and abandoning it ends those deliveries.
func Route(retry Retry, events workflows.Subjects) workflows.Route {
	return workflows.Route{Workflow: DeliverEvent, IDPrefix: "webhook-", Subjects: events, Input: func(it outbox.Item) any {
		return Input{OrgID: it.OrgID, EventID: it.SubjectID, Region: it.Region, Retry: retry}
	}}
}

// maxParallel bounds the endpoints one event is sent to at once.
const maxParallel = 16

// DeliverEvent delivers the event to its pending endpoints, each attempt
// signed anew; an endpoint that fails for the whole retry window is given
// up on (disabled, audited). It returns how many endpoints accepted it.
func DeliverEvent(ctx workflow.Context, in Input) (int, error) {
	retry := &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute}
	short := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second, RetryPolicy: retry})
	// One short query: a local activity saves a round trip through the
	// server on every event.
	local := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 30 * time.Second, RetryPolicy: retry})
	var pending []string
	if err := workflow.ExecuteLocalActivity(local, ActivityPendingTargets, in).Get(local, &pending); err != nil {
		return 0, err
	}
	deliver := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// The client gives up after 10 s; the rest is the database.
		StartToCloseTimeout:    30 * time.Second,
		ScheduleToCloseTimeout: in.Retry.Window,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        in.Retry.Initial,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Hour,
			NonRetryableErrorTypes: []string{workflows.ErrTypeInvalidRequest},
		},
	})
	firstAttempt := workflow.LocalActivityOptions{StartToCloseTimeout: 30 * time.Second, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}}
	delivered := 0
	workflows.ForEach(deliver, pending, maxParallel, func(ctx workflow.Context, endpointID string) error {
		// The first attempt runs in the workflow task: an endpoint that
		// accepts it costs no activity task. Later attempts follow the
		// day-long schedule.
		target := TargetInput{Input: in, EndpointID: endpointID}
		first := workflow.WithLocalActivityOptions(ctx, firstAttempt)
		err := workflow.ExecuteLocalActivity(first, ActivityDeliver, target).Get(first, nil)
		if err != nil && !workflows.IsPermanent(err) {
			target.Before = 1
			err = workflow.ExecuteActivity(ctx, ActivityDeliver, target).Get(ctx, nil)
		}
		if err == nil {
			delivered++
			return nil
		}
		giveUp, _ := workflow.NewDisconnectedContext(ctx)
		giveUp = workflow.WithActivityOptions(giveUp, workflow.GetActivityOptions(short))
		return workflow.ExecuteActivity(giveUp, ActivityGiveUp, GiveUpInput{TargetInput: target, Reason: in.Retry.Window.String()}).Get(giveUp, nil)
	})
	return delivered, nil
}
