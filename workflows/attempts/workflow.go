// Package attempts is the deadline workflow of an attempt (issue 55):
// KeepDeadline sleeps until the attempt's deadline plus grace, then has it
// submitted with what was saved, or discarded, as its assignment says.
// Its timer is Temporal's, kept by the server: when every assessd process
// was down at the deadline, the workflow runs as soon as a worker of the
// region returns. Its one activity is in activities/attempts; it is
// started from the outbox (Route) with the attempt.
//
// Path of an attempt: POST /assignments/{id}/attempts stores the attempt
// and its outbox row in one transaction; the dispatcher starts
// KeepDeadline on the region's task queue; CloseAttempt runs on that
// region's worker when the time is up. A student who submits first leaves
// the workflow nothing to do: it finds the attempt closed and ends.
package attempts

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/workflows"
)

// ActivityCloseAttempt is the activity's name, registered by the worker
// (activities/attempts). It is part of recorded histories: renaming it
// breaks running workflows.
const ActivityCloseAttempt = "CloseAttempt"

// Input identifies an attempt; it is the input of the workflow and of
// CloseAttempt.
type Input struct {
	OrgID     string
	AttemptID string
	Region    string
}

// Closing is what CloseAttempt found: the attempt closed (submitted,
// discarded, or deleted: Status ""), or still open until Until (its
// deadline plus grace, which an accommodation or a change of the
// assignment may have moved later since the workflow last looked).
type Closing struct {
	Closed bool
	Status string
	Until  time.Time
}

// Route is how an outbox attempt row becomes a KeepDeadline workflow, with
// id "attempt-<attempt id>" so a second start joins the first; an attempt
// is unfinished while in progress, and abandoning it closes it if its
// time is up.
func Route(attempts workflows.Subjects) workflows.Route {
	return workflows.Route{Workflow: KeepDeadline, IDPrefix: "attempt-", Subjects: attempts, Sleeps: true, Input: func(it outbox.Item) any {
		return Input{OrgID: it.OrgID, AttemptID: it.SubjectID, Region: it.Region}
	}}
}

// margin is how long after Until the workflow looks again: the database's
// clock, which decides, and the workflow's may differ by a little.
const margin = 200 * time.Millisecond

// KeepDeadline closes the attempt once its time is up and returns the
// status it ended in ("" when it was deleted).
func KeepDeadline(ctx workflow.Context, in Input) (string, error) {
	ctx = workflow.WithLocalActivityOptions(ctx, workflows.DatabaseActivityOptions())
	for {
		var c Closing
		if err := workflow.ExecuteLocalActivity(ctx, ActivityCloseAttempt, in).Get(ctx, &c); err != nil {
			return "", err
		}
		if c.Closed {
			return c.Status, nil
		}
		wait := max(c.Until.Sub(workflow.Now(ctx))+margin, time.Second)
		if err := workflow.Sleep(ctx, wait); err != nil {
			return "", err
		}
	}
}
