// Package regeneration holds the question regeneration workflow's
// activities (workflows/regeneration): asking the region's AI provider for
// a new version of a question, recording it, and recording a failure.
package regeneration

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/assessd/assessd/activities"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/regeneration"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/workflows"
	wf "github.com/assessd/assessd/workflows/regeneration"
)

// Regenerations is what the activities need of the regeneration store.
// Calls run for the organization in ctx; Propose and Fail change only a
// running regeneration, so retries are harmless.
type Regenerations interface {
	Request(ctx context.Context, id string) (ai.RegenerateRequest, error)
	Propose(ctx context.Context, id string, p ai.RegeneratedQuestion) (regeneration.Outcome, error)
	Fail(ctx context.Context, id, reason string) (regeneration.Outcome, error)
}

var _ Regenerations = (*regeneration.Service)(nil)

// Activities are the regeneration activities of one region's worker.
type Activities struct {
	Regenerations Regenerations
	Provider      ai.Provider
	Region        string
	Metrics       *Metrics
}

// Register registers the activities on w under the workflow's names.
func (a *Activities) Register(w worker.Registry) {
	w.RegisterActivityWithOptions(a.ProposeQuestion, activity.RegisterOptions{Name: wf.ActivityProposeQuestion})
	w.RegisterActivityWithOptions(a.RecordProposal, activity.RegisterOptions{Name: wf.ActivityRecordProposal})
	w.RegisterActivityWithOptions(a.FailRegeneration, activity.RegisterOptions{Name: wf.ActivityFailRegeneration})
}

// refuseOtherRegion keeps a region's content on its own worker: a task of
// another region that reached this worker's queue fails for good.
func (a *Activities) refuseOtherRegion(in wf.Input) error {
	if in.Region != a.Region {
		return workflows.Permanent("a "+in.Region+" regeneration reached a "+a.Region+" worker", nil)
	}
	return nil
}

// ProposeQuestion asks the region's provider for a new version of the
// question. A question the builtin provider cannot vary fails for good,
// with its reason.
func (a *Activities) ProposeQuestion(ctx context.Context, in wf.Input) (ai.RegeneratedQuestion, error) {
	if err := a.refuseOtherRegion(in); err != nil {
		return ai.RegeneratedQuestion{}, err
	}
	defer activities.Heartbeat(ctx, 5*time.Second)()
	req, err := a.Regenerations.Request(store.WithOrg(ctx, in.OrgID), in.RegenerationID)
	if err != nil {
		return ai.RegeneratedQuestion{}, permanentIfCannot(err)
	}
	req.Region = a.Region
	p, err := a.Provider.RegenerateQuestion(ctx, req)
	switch {
	case errors.Is(err, ai.ErrCannotRephrase):
		return ai.RegeneratedQuestion{}, workflows.Permanent(ai.ErrCannotRephrase.Error(), err)
	case errors.Is(err, ai.ErrInvalidRequest):
		return ai.RegeneratedQuestion{}, workflows.Permanent("the AI provider rejected the regeneration request", err)
	case err != nil:
		return ai.RegeneratedQuestion{}, err
	}
	return p, activities.CheckResultSize("the proposed question", p)
}

// RecordProposal validates the proposal against the question's type and
// records it; it returns the regeneration's status.
func (a *Activities) RecordProposal(ctx context.Context, in wf.RecordInput) (string, error) {
	if err := a.refuseOtherRegion(in.Input); err != nil {
		return "", err
	}
	out, err := a.Regenerations.Propose(store.WithOrg(ctx, in.OrgID), in.RegenerationID, in.Proposal)
	if err != nil {
		return "", permanentIfCannot(err)
	}
	a.Metrics.finished(in.OrgID, a.Region, out)
	return out.Status, nil
}

// permanentIfCannot makes a regeneration that cannot be carried out (its
// question was deleted meanwhile) a failure no retry is spent on.
func permanentIfCannot(err error) error {
	if errors.Is(err, regeneration.ErrCannotRegenerate) {
		return workflows.Permanent(err.Error(), nil)
	}
	return err
}

// FailRegeneration records why the regeneration failed. It runs whatever
// the region, so a misrouted task still finishes its regeneration.
func (a *Activities) FailRegeneration(ctx context.Context, in wf.FailInput) error {
	out, err := a.Regenerations.Fail(store.WithOrg(ctx, in.OrgID), in.RegenerationID, in.Error)
	if err == nil {
		a.Metrics.finished(in.OrgID, a.Region, out)
	}
	return err
}
