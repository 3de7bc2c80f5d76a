package attempts

import (
	"context"
	"testing"

	"github.com/assessd/assessd/workflows"
	wf "github.com/assessd/assessd/workflows/attempts"
)

// An attempt of another region that reached this worker fails for good
// before the worker touches it: retrying on the wrong worker cannot help,
// and the region's answers stay on its own worker.
func TestCloseAttemptRefusesAnotherRegionsAttempt(t *testing.T) {
	a := &Activities{Region: "global"} // no store: reaching it would panic
	_, err := a.CloseAttempt(context.Background(), wf.Input{OrgID: "org_1", AttemptID: "att_1", Region: "eu"})
	if !workflows.IsPermanent(err) {
		t.Fatalf("err = %v, want a permanent failure", err)
	}
}
