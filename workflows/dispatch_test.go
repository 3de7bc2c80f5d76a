package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/grpc"

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

// TestRegionalDispatchStartsOnTheRegionsWorker runs a regional dispatcher on
// the client of the EU region's worker and a fallback dispatcher beside it:
// the EU row's workflow is started with its first task in the start's
// answer (eager start) and completes on that worker, the global row waits
// for the fallback's grace and is then started through matching.
func TestRegionalDispatchStartsOnTheRegionsWorker(t *testing.T) {
	server := devenvtest.Server(t)
	var mu sync.Mutex
	eager := map[string]bool{}
	observe := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if start, ok := req.(*workflowservice.StartWorkflowExecutionRequest); ok && err == nil {
			mu.Lock()
			eager[start.GetWorkflowId()] = reply.(*workflowservice.StartWorkflowExecutionResponse).GetEagerWorkflowTask() != nil
			mu.Unlock()
		}
		return err
	}
	tc, err := client.Dial(client.Options{HostPort: server.Address, ConnectionOptions: client.ConnectionOptions{
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(observe)}}})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	queue, err := workflows.RegionTaskQueue("eu")
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(tc, queue, worker.Options{})
	w.RegisterWorkflow(nothing)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	db := storetest.New(t)
	org, err := tenancy.NewService(db).CreateOrg(t.Context(), tenancy.NewOrg{Name: "Regions", Country: "DE"})
	if err != nil {
		t.Fatal(err)
	}
	route := workflows.Route{Workflow: nothing, IDPrefix: "test-", Input: func(it outbox.Item) any { return it.SubjectID }}
	routes := map[outbox.Kind]workflows.Route{outbox.KindGrading: route}
	reg := prometheus.NewRegistry()
	ctx, stop := context.WithCancel(t.Context())
	var running sync.WaitGroup
	defer func() { stop(); running.Wait() }()
	regional := workflows.NewDispatcher(tc, outbox.NewStore(db), routes, reg, workflows.DispatchOptions{Region: "eu"})
	running.Go(func() { regional.Run(ctx) })

	octx := store.WithOrg(t.Context(), org.ID)
	if err := db.Tx(octx, func(ctx context.Context) error {
		return errors.Join(outbox.Add(ctx, db.Q(ctx), outbox.KindGrading, "res_eu", "eu"),
			outbox.Add(ctx, db.Q(ctx), outbox.KindGrading, "res_global", "global"))
	}); err != nil {
		t.Fatal(err)
	}
	eventually.Succeeds(t, 10*time.Second, func() error {
		_, err := tc.DescribeWorkflowExecution(t.Context(), "test-res_eu", "")
		return err
	})
	if err := tc.GetWorkflow(t.Context(), "test-res_eu", "").Get(t.Context(), nil); err != nil {
		t.Fatalf("the EU workflow: %v", err)
	}
	mu.Lock()
	eagerEU, globalStarted := eager["test-res_eu"], len(eager) > 1
	mu.Unlock()
	if !eagerEU || globalStarted {
		t.Fatalf("starts (workflow id: eager) %v: want test-res_eu eager, test-res_global not started", eager)
	}

	fallback := workflows.NewDispatcher(tc, outbox.NewStore(db), routes, reg,
		workflows.DispatchOptions{Grace: 200 * time.Millisecond, Sweep: 100 * time.Millisecond})
	running.Go(func() { fallback.Run(ctx) })
	eventually.Succeeds(t, 10*time.Second, func() error {
		_, err := tc.DescribeWorkflowExecution(t.Context(), "test-res_global", "")
		return err
	})
	mu.Lock()
	defer mu.Unlock()
	if eager["test-res_global"] {
		t.Fatal("the global workflow started eagerly on the EU worker's client")
	}
}

// TestTheRouteDecidesWhatIsReconciled: the reconciler asks each kind's
// route which subjects are unfinished, in their organization's scope. A
// finished subject's row is deleted and its workflow never started again;
// an unfinished subject whose workflow Temporal does not know is started
// again. The 1,100 finished rows before it take more than one page of
// the reconciler's reads, within one reconciliation. A row of a kind with
// no route is left to the release that knows it.
func TestTheRouteDecidesWhatIsReconciled(t *testing.T) {
	tc := devenvtest.Temporal(t)
	db := storetest.New(t)
	org, err := tenancy.NewService(db).CreateOrg(t.Context(), tenancy.NewOrg{Name: "Reconciled", Country: "US"})
	if err != nil {
		t.Fatal(err)
	}
	octx := store.WithOrg(t.Context(), org.ID)
	rows := outbox.NewStore(db)
	// dispatch adds rows and marks them dispatched without a start:
	// Temporal knows none of their workflows.
	dispatch := func(add func(ctx context.Context, q store.Querier) error) {
		t.Helper()
		if err := db.Tx(octx, func(ctx context.Context) error { return add(ctx, db.Q(ctx)) }); err != nil {
			t.Fatal(err)
		}
		items, err := rows.Claim(t.Context(), outbox.Filter{}, 2000, time.Minute)
		if err == nil {
			err = rows.Dispatched(t.Context(), items...)
		}
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	dispatch(func(ctx context.Context, q store.Querier) error {
		for i := range 1100 {
			if err := outbox.Add(ctx, q, outbox.KindGrading, fmt.Sprintf("res_done%04d", i), "global"); err != nil {
				return err
			}
		}
		return outbox.Add(ctx, q, outbox.KindGeneration, "gen_unrouted", "global")
	})
	// Dispatched last, the lost row is read after the others.
	dispatch(func(ctx context.Context, q store.Querier) error {
		return outbox.Add(ctx, q, outbox.KindGrading, "res_lost", "global")
	})

	var mu sync.Mutex
	asked := map[string]string{} // subject: the organization of its question
	unfinished := func(ctx context.Context, ids []string) ([]string, error) {
		mu.Lock()
		defer mu.Unlock()
		org, _ := store.OrgID(ctx)
		var out []string
		for _, id := range ids {
			asked[id] = org
			if id == "res_lost" {
				out = append(out, id)
			}
		}
		return out, nil
	}
	route := workflows.Route{Workflow: nothing, IDPrefix: "test-", Input: func(it outbox.Item) any { return it.SubjectID },
		Subjects: workflows.Subjects{Unfinished: unfinished}}
	d := workflows.NewDispatcher(tc, rows, map[outbox.Kind]workflows.Route{outbox.KindGrading: route},
		prometheus.NewRegistry(), workflows.DispatchOptions{Quiet: time.Millisecond})
	d.Reconcile(t.Context())

	if len(asked) != 1101 || asked["res_lost"] != org.ID || asked["res_done1099"] != org.ID {
		t.Fatalf("the route was asked about %d subjects (res_lost in %q), want 1,101 in %s", len(asked), asked["res_lost"], org.ID)
	}
	items, err := rows.Claim(t.Context(), outbox.Filter{}, 10, time.Minute)
	if err != nil || len(items) != 1 || items[0].SubjectID != "res_lost" || items[0].Restarts != 1 {
		t.Fatalf("due after the reconciliation: %+v, %v; want res_lost restarted", items, err)
	}
	time.Sleep(10 * time.Millisecond)
	left, err := rows.Unchecked(t.Context(), outbox.Quiet{Rows: time.Millisecond}, 2000)
	if err != nil || len(left) != 1 || left[0].SubjectID != "gen_unrouted" {
		t.Fatalf("dispatched rows left: %+v, %v; want only the unrouted one", left, err)
	}
}
