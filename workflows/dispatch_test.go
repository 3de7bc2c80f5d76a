package workflows_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/devenvtest"
	"github.com/assessd/assessd/internal/testkit/eventually"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/workflows"
)

// gatedClient is a Temporal client that reports each start as it begins
// and holds the start of one workflow id until released.
type gatedClient struct {
	client.Client
	held    string
	release chan struct{}
	begun   chan string
}

func (c *gatedClient) ExecuteWorkflow(ctx context.Context, opts client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	c.begun <- opts.ID
	if opts.ID == c.held {
		select {
		case <-c.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return c.Client.ExecuteWorkflow(ctx, opts, wf, args...)
}

func nothing(workflow.Context, string) error { return nil }

// TestASlowStartDoesNotHoldBackLaterRows commits a row while the start of
// an earlier one hangs: the later row is claimed and started without
// waiting for it, and both end up dispatched.
func TestASlowStartDoesNotHoldBackLaterRows(t *testing.T) {
	tc := devenvtest.Temporal(t)
	db := storetest.New(t)
	org, err := tenancy.NewService(db).CreateOrg(t.Context(), tenancy.NewOrg{Name: "Gated", Country: "US"})
	if err != nil {
		t.Fatal(err)
	}
	gated := &gatedClient{Client: tc, held: "test-res_slow", release: make(chan struct{}), begun: make(chan string, 8)}
	route := workflows.Route{Workflow: nothing, IDPrefix: "test-", Input: func(it outbox.Item) any { return it.SubjectID }}
	d := workflows.NewDispatcher(gated, outbox.NewStore(db), map[outbox.Kind]workflows.Route{outbox.KindGrading: route},
		prometheus.NewRegistry(), workflows.DispatchOptions{StartTimeout: time.Minute})
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	defer func() { stop(); <-done }()

	add := func(subjectID string) {
		t.Helper()
		ctx := store.WithOrg(t.Context(), org.ID)
		if err := db.Tx(ctx, func(ctx context.Context) error {
			return outbox.Add(ctx, db.Q(ctx), outbox.KindGrading, subjectID, "global")
		}); err != nil {
			t.Fatal(err)
		}
	}
	expectStart := func(want string) {
		t.Helper()
		select {
		case id := <-gated.begun:
			if id != want {
				t.Fatalf("start of %s, want %s", id, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s not started within 10 s", want)
		}
	}
	add("res_slow")
	expectStart("test-res_slow")
	add("res_next")
	expectStart("test-res_next")
	close(gated.release)

	backlog := outbox.NewStore(db)
	eventually.Succeeds(t, 10*time.Second, func() error {
		for _, id := range []string{"test-res_slow", "test-res_next"} {
			if _, err := tc.DescribeWorkflowExecution(t.Context(), id, ""); err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
		}
		pending, err := backlog.Backlog(t.Context())
		if err != nil || len(pending) > 0 {
			return fmt.Errorf("still pending: %+v, %v", pending, err)
		}
		return nil
	})
}
