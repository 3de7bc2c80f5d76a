package ltiscores

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/testkit/replaytest"
	"github.com/assessd/assessd/workflows"
)

// historyFile is a recorded PostScore history of a score the platform
// refused, then given up. Record it with
// UPDATE_HISTORIES=1 go test ./workflows/ltiscores -run TestRecordPostScoreHistory.
var historyFile = filepath.Join("testdata", "post_score_history.json")

func TestReplayPostScore(t *testing.T) {
	h := replaytest.Load(t, historyFile, "PostScore")
	var in Input
	h.Decode(h.Input, &in)
	if want := (Input{OrgID: "org_1", ResultID: "res_recorded", Region: "eu"}); in != want {
		t.Errorf("input %+v, want %+v", in, want)
	}
	if !slices.Equal(h.Activities, []string{ActivityPost}) || !slices.Equal(h.LocalActivities, []string{ActivityGiveUp}) {
		t.Fatalf("activities %v and local activities %v, want [%s] and [%s]", h.Activities, h.LocalActivities, ActivityPost, ActivityGiveUp)
	}
	h.Replay(PostScore)
}

func TestRecordPostScoreHistory(t *testing.T) {
	post := func(context.Context, Input) error {
		return workflows.Permanent("lti: the platform refused the request: score post answered 400", errors.New("400"))
	}
	giveUp := func(context.Context, GiveUpInput) error { return nil }
	replaytest.Record(t, historyFile, Route(workflows.Subjects{}),
		outbox.Item{Kind: outbox.KindLTIScore, OrgID: "org_1", SubjectID: "res_recorded", Region: "eu"},
		map[string]any{ActivityPost: post, ActivityGiveUp: giveUp})
}
