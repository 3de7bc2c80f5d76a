// Package attempts holds the activity of an attempt's deadline workflow
// (workflows/attempts): closing the attempt once its time is up.
package attempts

import (
	"context"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/assessd/assessd/internal/delivery"
	"github.com/assessd/assessd/workflows"
	wf "github.com/assessd/assessd/workflows/attempts"
)

// Attempts is what the activity needs of the delivery service. Close does
// nothing to an attempt already closed, so retries are harmless.
type Attempts interface {
	Close(ctx context.Context, orgID, id string) (delivery.Closing, error)
}

var _ Attempts = (*delivery.Service)(nil)

// Activities are the attempt activities of one region's worker.
type Activities struct {
	Attempts Attempts
	Region   string
}

// Register registers the activities on w under the workflow's names.
func (a *Activities) Register(w worker.Registry) {
	w.RegisterActivityWithOptions(a.CloseAttempt, activity.RegisterOptions{Name: wf.ActivityCloseAttempt})
}

// CloseAttempt submits or discards the attempt if its time is up, and
// otherwise says until when it is open. An attempt of another region that
// reached this worker's queue fails for good: a region's answers stay on
// its own worker.
func (a *Activities) CloseAttempt(ctx context.Context, in wf.Input) (wf.Closing, error) {
	if in.Region != a.Region {
		return wf.Closing{}, workflows.Permanent("a "+in.Region+" attempt reached a "+a.Region+" worker", nil)
	}
	c, err := a.Attempts.Close(ctx, in.OrgID, in.AttemptID)
	if err != nil {
		return wf.Closing{}, err
	}
	return wf.Closing{Closed: c.Closed, Status: c.Status, Until: c.Until}, nil
}
