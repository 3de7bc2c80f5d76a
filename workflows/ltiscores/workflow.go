// Package ltiscores is the LTI score workflow (issue 57, decision 0204):
// PostScore posts a graded result's score to the line item its student
// launched the assignment from, retrying for a day, and gives up with an
// audit entry when the platform never takes it. Its activities are in
// activities/ltiscores; it is started from the outbox (Route) on the task
// queue of the organization's region, so the score leaves from that
// region's workers.
//
// Path of a score: the transaction in which a result's grading finishes
// counts the grading in the result's lti_scores row and arms its outbox
// row; the dispatcher starts PostScore; PostLTIScore posts the latest
// grading not yet posted, so a grading is posted once and a corrected
// score (a later grading, the row armed again) once more.
package ltiscores

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/workflows"
)

// Activity names, registered by the worker (activities/ltiscores). They
// are part of recorded histories: renaming one breaks running workflows.
const (
	ActivityPost   = "PostLTIScore"
	ActivityGiveUp = "GiveUpLTIScore"
)

// Window is how long a score is retried before it is given up.
const Window = 24 * time.Hour

// Input identifies a result whose score to post; it is the workflow's
// input and its activities'.
type Input struct {
	OrgID    string
	ResultID string
	Region   string
}

// GiveUpInput ends a score's posting (GiveUpLTIScore).
type GiveUpInput struct {
	Input
	Reason string
}

// Route is how an outbox lti_score row becomes a PostScore workflow, with
// id "lti-score-<result id>"; a score is unfinished while its latest
// grading is not posted, and abandoning it gives it up.
func Route(scores workflows.Subjects) workflows.Route {
	return workflows.Route{Workflow: PostScore, IDPrefix: "lti-score-", Subjects: scores, Input: func(it outbox.Item) any {
		return Input{OrgID: it.OrgID, ResultID: it.SubjectID, Region: it.Region}
	}}
}

// PostScore posts the result's score, retried with exponential backoff up
// to an hour for Window; a platform that refuses it, or never answers,
// ends in GiveUpLTIScore.
func PostScore(ctx workflow.Context, in Input) error {
	post := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// The client gives up after 10 s per request; a post is a token
		// grant and the score.
		StartToCloseTimeout:    time.Minute,
		ScheduleToCloseTimeout: Window,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 5 * time.Second, BackoffCoefficient: 2, MaximumInterval: time.Hour,
			NonRetryableErrorTypes: []string{workflows.ErrTypeInvalidRequest}},
	})
	err := workflow.ExecuteActivity(post, ActivityPost, in).Get(post, nil)
	if err == nil {
		return nil
	}
	reason := "the platform did not take the score within " + Window.String()
	var refused *temporal.ApplicationError
	if errors.As(err, &refused) {
		reason = refused.Message()
	}
	giveUp, _ := workflow.NewDisconnectedContext(ctx)
	giveUp = workflow.WithLocalActivityOptions(giveUp, workflows.DatabaseActivityOptions())
	return workflow.ExecuteLocalActivity(giveUp, ActivityGiveUp, GiveUpInput{Input: in, Reason: reason}).Get(giveUp, nil)
}
