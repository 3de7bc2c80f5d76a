package grading

import (
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"go.temporal.io/sdk/workflow"

	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/testkit/replaytest"
	"github.com/assessd/assessd/workflows"
)

// histories are recorded GradeResult histories (three answers, one retried
// after a transient error, one failing for good), one per version, oldest
// first: before localActivities, with every activity an activity task;
// since, with PendingAnswers and FinishResult local; since localFirstGrade,
// with each first grading attempt local too; since versionInInput, the
// same without a version marker; since answersInInput, without
// PendingAnswers, the answers being in the input. Record the newest with
// UPDATE_HISTORIES=1 go test ./workflows/grading -run TestRecordGradeResultHistory.
var histories = []struct {
	file    string
	version int
}{
	{filepath.Join("testdata", "grade_result_history.json"), 0},
	{filepath.Join("testdata", "grade_result_history_local.json"), localActivities},
	{filepath.Join("testdata", "grade_result_history_local_first.json"), localFirstGrade},
	{filepath.Join("testdata", "grade_result_history_version_in_input.json"), versionInInput},
	{filepath.Join("testdata", "grade_result_history_answers_in_input.json"), answersInInput},
}

// TestReplayGradeResult checks that each recorded history is the one it
// claims to be (its workflow, input, activities and outcome decode into
// today's types), then replays it against the current workflow code: a
// change that is not deterministic fails here instead of in production,
// where running workflows would get stuck.
func TestReplayGradeResult(t *testing.T) {
	for _, h := range histories {
		t.Run(filepath.Base(h.file), func(t *testing.T) { replayHistory(t, h.file, h.version) })
	}
}

func replayHistory(t *testing.T, file string, version int) {
	h := replaytest.Load(t, file, "GradeResult")
	var in Input
	h.Decode(h.Input, &in)
	want := Input{OrgID: "org_1", ResultID: "res_recorded", Region: "eu"}
	if version >= versionInInput {
		want.Version = workflow.Version(version)
	}
	if version >= answersInInput {
		want.Answers = recordedAnswers
	}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("input %+v, want %+v", in, want)
	}
	// A version marker upserts the TemporalChangeVersion search attribute;
	// a run that has its version in the input makes none.
	upserts := 0
	if version == localActivities || version == localFirstGrade {
		upserts = 1
	}
	if h.SearchAttributeUpserts != upserts {
		t.Errorf("%d search attribute upserts, want %d", h.SearchAttributeUpserts, upserts)
	}
	rejected := "the AI provider rejected the request"
	grades := []string{ActivityGradeAnswer, ActivityGradeAnswer, ActivityGradeAnswer}
	switch version {
	case answersInInput:
		// The answers come with the input: no PendingAnswers.
		local := append(slices.Clone(grades), ActivityFinishResult)
		if !slices.Equal(h.LocalActivities, local) || !slices.Equal(h.Activities, grades[:1]) {
			t.Errorf("local activities %v and activity tasks %v, want %v and %v", h.LocalActivities, h.Activities, local, grades[:1])
		}
	case localFirstGrade, versionInInput:
		// Every answer's first attempt is local; only a2's retry is a task.
		local := append(append([]string{ActivityPendingAnswers}, grades...), ActivityFinishResult)
		if !slices.Equal(h.LocalActivities, local) || !slices.Equal(h.Activities, grades[:1]) {
			t.Errorf("local activities %v and activity tasks %v, want %v and %v", h.LocalActivities, h.Activities, local, grades[:1])
		}
	case localActivities:
		if want := []string{ActivityPendingAnswers, ActivityFinishResult}; !slices.Equal(h.LocalActivities, want) || !slices.Equal(h.Activities, grades) {
			t.Errorf("local activities %v and activity tasks %v, want %v and %v", h.LocalActivities, h.Activities, want, grades)
		}
	default:
		want := append(append([]string{ActivityPendingAnswers}, grades...), ActivityFinishResult)
		if !slices.Equal(h.Activities, want) || len(h.LocalActivities) != 0 {
			t.Fatalf("activities %v (local %v), want %v", h.Activities, h.LocalActivities, want)
		}
		var finish FinishInput
		h.Decode(h.ActivityInputs[len(want)-1], &finish)
		if len(finish.Failures) != 1 || finish.Failures[0] != (AnswerFailure{AnswerID: "a3", Reason: rejected}) || finish.ResultID != "res_recorded" {
			t.Errorf("FinishResult input %+v, want the one rejected answer a3", finish)
		}
	}
	var out Outcome
	h.Decode(h.Result, &out)
	if out.Status != "failed" || out.Reason != rejected {
		t.Errorf("outcome %+v", out)
	}
	h.Replay(GradeResult)
}

// A run started with a version in its input by a dispatcher of this
// release but taken by a worker of the one before, which did not read it:
// that worker asked GetVersion (a marker and an upsert) and took
// localFirstGrade's steps, which today's code replays without asking.
func TestReplayAVersionedRunAnOlderWorkerTook(t *testing.T) {
	h := replaytest.Load(t, histories[2].file, "GradeResult")
	if h.SearchAttributeUpserts != 1 {
		t.Fatalf("%s has %d search attribute upserts, want GetVersion's one", histories[2].file, h.SearchAttributeUpserts)
	}
	h.SetInput(Input{OrgID: "org_1", ResultID: "res_recorded", Region: "eu", Version: versionInInput})
	h.Replay(GradeResult)
}

// recordedAnswers are the answers of the recorded result.
var recordedAnswers = []string{"a1", "a2", "a3"}

func TestRecordGradeResultHistory(t *testing.T) {
	f := &fakeGrading{pending: recordedAnswers, failOnce: map[string]bool{"a2": true}, invalid: map[string]bool{"a3": true}}
	replaytest.Record(t, histories[len(histories)-1].file, Route(workflows.Subjects{}),
		outbox.Item{Kind: outbox.KindGrading, OrgID: "org_1", SubjectID: "res_recorded", Region: "eu", Answers: recordedAnswers},
		map[string]any{ActivityPendingAnswers: f.PendingAnswers, ActivityGradeAnswer: f.GradeAnswer, ActivityFinishResult: f.FinishResult})
}
