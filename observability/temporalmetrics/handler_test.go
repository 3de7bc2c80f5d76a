package temporalmetrics_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/assessd/assessd/internal/testkit/devenvtest"
	"github.com/assessd/assessd/internal/testkit/eventually"
	"github.com/assessd/assessd/observability/temporalmetrics"
)

func echo(_ context.Context, s string) (string, error) { return s, nil }

func echoWorkflow(ctx workflow.Context, s string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var out string
	err := workflow.ExecuteActivity(ctx, echo, s).Get(ctx, &out)
	return out, err
}

// A worker whose client carries the handler exports the SDK's worker
// metrics (schedule-to-start by task queue, completed workflows) in the
// registry; a second handler on the same registry shares its collectors.
func TestWorkerMetricsReachTheRegistry(t *testing.T) {
	base := devenvtest.Temporal(t)
	reg := prometheus.NewRegistry()
	c, err := client.NewClientFromExisting(base, client.Options{MetricsHandler: temporalmetrics.NewHandler(reg)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = temporalmetrics.NewHandler(reg).Counter("temporal_workflow_completed") // shares, does not panic

	// An eagerly started activity has no schedule-to-start latency to
	// record; this one is polled, as when the worker has no free slot.
	w := worker.New(c, "metrics-test", worker.Options{DisableEagerActivities: true})
	w.RegisterWorkflow(echoWorkflow)
	w.RegisterActivity(echo)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "metrics-test"}, echoWorkflow, "hi")
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}

	s2s := series(t, reg, "temporal_activity_schedule_to_start_latency_seconds", map[string]string{
		"namespace": "default", "task_queue": "metrics-test", "activity_type": "echo", "workflow_type": "echoWorkflow",
	})
	if got := s2s.GetHistogram().GetSampleCount(); got != 1 {
		t.Errorf("schedule-to-start samples = %d, want 1", got)
	}
	// The worker counts the workflow after it reports the completion, so
	// the count may lag the result the client already has.
	eventually.Succeeds(t, 5*time.Second, func() error {
		done, err := find(reg, "temporal_workflow_completed_total", map[string]string{"task_queue": "metrics-test", "workflow_type": "echoWorkflow"})
		if err != nil {
			return err
		}
		if got := done.GetCounter().GetValue(); got != 1 {
			return fmt.Errorf("completed workflows = %v, want 1", got)
		}
		return nil
	})
	series(t, reg, "temporal_worker_task_slots_available", map[string]string{"task_queue": "metrics-test", "worker_type": "ActivityWorker"})
	series(t, reg, "temporal_request_latency_seconds", map[string]string{"operation": "StartWorkflowExecution"})
}

// series returns the first series of name whose labels include want.
func series(t *testing.T, g prometheus.Gatherer, name string, want map[string]string) *dto.Metric {
	t.Helper()
	m, err := find(g, name, want)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// find returns the first series of name whose labels include want.
func find(g prometheus.Gatherer, name string, want map[string]string) (*dto.Metric, error) {
	families, err := g.Gather()
	if err != nil {
		return nil, err
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue next
				}
			}
			return m, nil
		}
	}
	return nil, fmt.Errorf("no series %s with labels %v", name, want)
}
