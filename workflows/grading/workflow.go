// Package grading is the grading workflow: GradeResult grades the AI-graded
// answers of a submitted result and finishes the result. Its activities
// are in activities/grading; it is started from the outbox (Route).
//
// Path of a result: POST /exams/{examId}/results stores the result, its
// pending answers and its outbox row in one transaction; the dispatcher
// claims the row with the pending answers' ids and starts GradeResult with
// them on the region's task queue; one GradeAnswer per answer (CDN files,
// the region's AI provider, the recorded grade) and FinishResult run on
// that region's worker (runs of earlier versions list the answers with
// PendingAnswers first).
package grading

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/workflows"
)

// Activity names, registered by the worker (activities/grading). They are
// part of recorded histories: renaming one breaks running workflows.
const (
	ActivityPendingAnswers = "PendingAnswers"
	ActivityGradeAnswer    = "GradeAnswer"
	ActivityFinishResult   = "FinishResult"
)

// MaxParallelAnswers bounds the AI calls one result makes at once.
const MaxParallelAnswers = 4

// Input identifies a submitted result; it is the input of the workflow and
// of PendingAnswers.
type Input struct {
	OrgID    string
	ResultID string
	Region   string
	// Version is the GradeResult version the run follows, chosen by its
	// starter (Route): 0 in runs started before the input carried it,
	// which take theirs from a version marker.
	Version workflow.Version `json:",omitempty"`
	// Answers are the question ids of the answers awaiting AI grading, in
	// exam order, as the outbox claim read them (answersInInput); before
	// that version the run reads them with PendingAnswers.
	Answers []string `json:",omitempty"`
}

// AnswerInput identifies one answer to grade with AI (GradeAnswer).
type AnswerInput struct {
	OrgID    string
	ResultID string
	AnswerID string
	Region   string
}

// AnswerFailure is an answer whose AI grading failed for good.
type AnswerFailure struct {
	AnswerID string
	Reason   string
}

// FinishInput closes a result (FinishResult): the scores are summed and
// the status becomes graded, or failed when any answer failed.
type FinishInput struct {
	OrgID    string
	ResultID string
	Failures []AnswerFailure
}

// Outcome is the final state of a result, the workflow's output.
type Outcome struct {
	Status      string
	Score       float64
	Reason      string
	SubmittedAt time.Time
}

// Route is how an outbox grading row becomes a GradeResult workflow, with id
// "grade-<subject id>" so a second start joins the first; a result is
// unfinished while grading, and abandoning it fails its pending answers.
func Route(results workflows.Subjects) workflows.Route {
	return workflows.Route{Workflow: GradeResult, IDPrefix: "grade-", Subjects: results, Input: func(it outbox.Item) any {
		return Input{OrgID: it.OrgID, ResultID: it.SubjectID, Region: it.Region, Version: answersInInput, Answers: it.Answers}
	}}
}

// Versions of GradeResult. Histories recorded before each replay as they
// ran.
const (
	// localActivities: PendingAnswers and FinishResult, two short database
	// statements, run as local activities in the workflow task instead of
	// as activity tasks through the server: a result costs two workflow
	// tasks and one activity task per answer rather than four and three.
	localActivities = 1
	// localFirstGrade: each answer's first grading attempt also runs in the
	// workflow task; only an answer whose first attempt fails takes the
	// activity task and its retries. A result graded at the first attempt
	// costs one workflow task, as little of the server as any workflow
	// (decision 0123).
	localFirstGrade = 2
	// versionInInput: as localFirstGrade, with the version in the input
	// instead of a GetVersion marker, whose TemporalChangeVersion search
	// attribute cost every run an upsert event and a visibility write
	// (decision 0133).
	versionInInput = 3
	// answersInInput: as versionInInput, with the answers to grade in the
	// input, read by the outbox claim, instead of a PendingAnswers local
	// activity: one database round trip and one history marker less per
	// result (decision 0138).
	answersInInput = 4
)

// firstGradeAttempt runs one grading attempt as long as an activity task's
// would; the retries are the activity task's.
var firstGradeAttempt = workflow.LocalActivityOptions{StartToCloseTimeout: 2 * time.Minute, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}}

// GradeResult grades the AI-graded answers of a result (rules-scored answers
// were scored on submission), at most MaxParallelAnswers at a time, and
// finishes the result. Transient AI errors are retried with backoff; an
// answer that cannot be graded is recorded and fails the result with a
// reason.
func GradeResult(ctx workflow.Context, in Input) (Outcome, error) {
	ctx = workflow.WithActivityOptions(ctx, workflows.AIActivityOptions(2*time.Minute, 10*time.Second, 6))
	ctx = workflow.WithLocalActivityOptions(ctx, workflows.DatabaseActivityOptions())
	version := in.Version
	switch {
	case version == 0: // not in the input
		version = workflow.GetVersion(ctx, "local-result-activities", workflow.DefaultVersion, localFirstGrade)
	case version > answersInInput:
		// Started by a newer release: fail the task until a worker that
		// knows the version takes it, as GetVersion would.
		panic(fmt.Sprintf("GradeResult version %d is newer than this worker's %d", version, answersInInput)) //nolint:forbidigo // a workflow task failure, retried
	}
	execute := func(ctx workflow.Context, name string, arg any) workflow.Future {
		if version >= localActivities {
			return workflow.ExecuteLocalActivity(ctx, name, arg)
		}
		return workflow.ExecuteActivity(ctx, name, arg)
	}
	pending := in.Answers
	if version < answersInInput {
		if err := execute(ctx, ActivityPendingAnswers, in).Get(ctx, &pending); err != nil {
			return Outcome{}, err
		}
	}
	failed := workflows.ForEach(ctx, pending, MaxParallelAnswers, func(ctx workflow.Context, answerID string) error {
		answer := AnswerInput{OrgID: in.OrgID, ResultID: in.ResultID, AnswerID: answerID, Region: in.Region}
		if version >= localFirstGrade {
			first := workflow.WithLocalActivityOptions(ctx, firstGradeAttempt)
			err := workflow.ExecuteLocalActivity(first, ActivityGradeAnswer, answer).Get(first, nil)
			if err == nil || workflows.IsPermanent(err) {
				return err
			}
		}
		return workflow.ExecuteActivity(ctx, ActivityGradeAnswer, answer).Get(ctx, nil)
	})
	var failures []AnswerFailure
	for i, answerID := range pending {
		if reason, ok := failed[i]; ok {
			failures = append(failures, AnswerFailure{AnswerID: answerID, Reason: reason})
		}
	}
	slices.SortFunc(failures, func(a, b AnswerFailure) int { return strings.Compare(a.AnswerID, b.AnswerID) })

	// Finishing must happen even if the workflow is being cancelled.
	finishCtx, _ := workflow.NewDisconnectedContext(ctx)
	var out Outcome
	err := execute(finishCtx, ActivityFinishResult, FinishInput{
		OrgID: in.OrgID, ResultID: in.ResultID, Failures: failures,
	}).Get(finishCtx, &out)
	return out, err
}
