package scanning

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/testkit/replaytest"
	"github.com/assessd/assessd/workflows"
)

// historyFile is a recorded ScanSheets history: three pages, the second
// retried after a transient error, the third failing for good. Record it
// with UPDATE_HISTORIES=1 go test ./workflows/scanning -run TestRecordScanSheetsHistory.
var historyFile = filepath.Join("testdata", "scan_sheets_history.json")

func TestReplayScanSheets(t *testing.T) {
	h := replaytest.Load(t, historyFile, "ScanSheets")
	var in Input
	h.Decode(h.Input, &in)
	if want := (Input{OrgID: "org_1", ScanID: "scn_recorded", Region: "eu"}); in != want {
		t.Errorf("input %+v, want %+v", in, want)
	}
	want := []string{ActivitySplitScan, ActivityReadPage, ActivityReadPage, ActivityReadPage, ActivityFinishScan}
	if !slices.Equal(h.Activities, want) {
		t.Fatalf("activities %v, want %v", h.Activities, want)
	}
	var finish FinishInput
	h.Decode(h.ActivityInputs[len(want)-1], &finish)
	if len(finish.Failures) != 1 || finish.Failures[0].Page != 3 {
		t.Errorf("FinishScan input %+v, want page 3 failed", finish)
	}
	var out Outcome
	h.Decode(h.Result, &out)
	if out.Status != "completed" || out.Errors != 1 {
		t.Errorf("outcome %+v", out)
	}
	h.Replay(ScanSheets)
}

func TestRecordScanSheetsHistory(t *testing.T) {
	f := &fakeScanning{pages: []int{1, 2, 3}, failOnce: map[int]bool{2: true}, invalid: map[int]bool{3: true}}
	replaytest.Record(t, historyFile, Route(workflows.Subjects{}),
		outbox.Item{Kind: outbox.KindScanning, OrgID: "org_1", SubjectID: "scn_recorded", Region: "eu"},
		map[string]any{ActivitySplitScan: f.SplitScan, ActivityReadPage: f.ReadPage, ActivityFinishScan: f.FinishScan, ActivityFailScan: f.FailScan})
}
