// Package ltiscores holds the LTI score workflow's activities
// (workflows/ltiscores): posting a result's score to its line item, and
// giving it up.
package ltiscores

import (
	"context"
	"errors"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/assessd/assessd/internal/lti"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/workflows"
	wf "github.com/assessd/assessd/workflows/ltiscores"
)

// Scores is what the activities need of internal/lti; calls run for the
// organization in ctx.
type Scores interface {
	PostScore(ctx context.Context, resultID string) error
	GiveUpScore(ctx context.Context, resultID, reason string) error
}

var _ Scores = (*lti.Service)(nil)

// Activities are the LTI score activities of one region's worker.
type Activities struct {
	Scores Scores
	Region string
}

// Register registers the activities on w under the workflow's names.
func (a *Activities) Register(w worker.Registry) {
	w.RegisterActivityWithOptions(a.Post, activity.RegisterOptions{Name: wf.ActivityPost})
	w.RegisterActivityWithOptions(a.GiveUp, activity.RegisterOptions{Name: wf.ActivityGiveUp})
}

// Post posts the result's score; the platform's refusal fails for good,
// anything else is retried by the workflow's schedule. A score of another
// region's organization fails for good: it leaves from its own region.
func (a *Activities) Post(ctx context.Context, in wf.Input) error {
	if in.Region != a.Region {
		return workflows.Permanent("a "+in.Region+" score reached a "+a.Region+" worker", nil)
	}
	err := a.Scores.PostScore(store.WithOrg(ctx, in.OrgID), in.ResultID)
	if errors.Is(err, lti.ErrPlatformRefused) {
		return workflows.Permanent(err.Error(), err)
	}
	return err
}

// GiveUp records that the score could not be posted.
func (a *Activities) GiveUp(ctx context.Context, in wf.GiveUpInput) error {
	return a.Scores.GiveUpScore(store.WithOrg(ctx, in.OrgID), in.ResultID, in.Reason)
}
