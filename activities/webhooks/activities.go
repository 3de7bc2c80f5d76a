// Package webhooks holds the webhook delivery workflow's activities
// (workflows/webhooks): listing an event's pending endpoints, one signed
// delivery attempt, and giving up on an endpoint.
package webhooks

import (
	"context"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/webhooks"
	"github.com/assessd/assessd/workflows"
	wf "github.com/assessd/assessd/workflows/webhooks"
)

// Deliverer is what the activities need of internal/webhooks; calls run
// for the organization in ctx.
type Deliverer interface {
	Pending(ctx context.Context, eventID string) ([]string, error)
	Attempt(ctx context.Context, eventID, endpointID string, attempt int) error
	GiveUp(ctx context.Context, eventID, endpointID, reason string) error
}

var _ Deliverer = (*webhooks.Deliverer)(nil)

// Activities are the webhook activities of one region's worker.
type Activities struct {
	Deliverer Deliverer
	Region    string
}

// Register registers the activities on w under the workflow's names.
func (a *Activities) Register(w worker.Registry) {
	w.RegisterActivityWithOptions(a.PendingTargets, activity.RegisterOptions{Name: wf.ActivityPendingTargets})
	w.RegisterActivityWithOptions(a.Deliver, activity.RegisterOptions{Name: wf.ActivityDeliver})
	w.RegisterActivityWithOptions(a.GiveUp, activity.RegisterOptions{Name: wf.ActivityGiveUp})
}

// refuseOtherRegion keeps an organization's payloads on its region's
// workers: an event of another region that reached this queue fails for
// good.
func (a *Activities) refuseOtherRegion(in wf.Input) error {
	if in.Region != a.Region {
		return workflows.Permanent("a "+in.Region+" webhook event reached a "+a.Region+" worker", nil)
	}
	return nil
}

// PendingTargets returns the endpoints the event still has to reach.
func (a *Activities) PendingTargets(ctx context.Context, in wf.Input) ([]string, error) {
	if err := a.refuseOtherRegion(in); err != nil {
		return nil, err
	}
	return a.Deliverer.Pending(store.WithOrg(ctx, in.OrgID), in.EventID)
}

// Deliver makes one attempt; a failure is retried by the workflow's
// schedule.
func (a *Activities) Deliver(ctx context.Context, in wf.TargetInput) error {
	if err := a.refuseOtherRegion(in.Input); err != nil {
		return err
	}
	return a.Deliverer.Attempt(store.WithOrg(ctx, in.OrgID), in.EventID, in.EndpointID, in.Before+int(activity.GetInfo(ctx).Attempt))
}

// GiveUp disables an endpoint that never accepted the event.
func (a *Activities) GiveUp(ctx context.Context, in wf.GiveUpInput) error {
	return a.Deliverer.GiveUp(store.WithOrg(ctx, in.OrgID), in.EventID, in.EndpointID, in.Reason)
}
