package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/testkit/devenvtest"
	"github.com/assessd/assessd/internal/testkit/eventually"
	"github.com/assessd/assessd/internal/testkit/redistest"
	"github.com/assessd/assessd/internal/testkit/storetest"
)

// TestServeAndWorkerShareAnEnvironment starts serve and a worker with the
// same environment, as a deployment does: both come up, the worker with
// its metrics on ASSESSD_METRICS_ADDR.
func TestServeAndWorkerShareAnEnvironment(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", devenvtest.Server(t).Address)
	apiAddr, metricsAddr := freeAddr(t), freeAddr(t)
	t.Setenv("DATABASE_URL", storetest.NewURL(t))
	t.Setenv("REDIS_URL", redistest.URL(t))
	t.Setenv("ASSESSD_ADDR", apiAddr)
	t.Setenv("ASSESSD_METRICS_ADDR", metricsAddr)

	ctx, cancel := context.WithCancel(context.Background())
	serveDone, workerDone := make(chan error, 1), make(chan error, 1)
	var serveLog, workerLog bytes.Buffer
	go func() { serveDone <- run(ctx, []string{"serve"}, &bytes.Buffer{}, &serveLog) }()
	waitHealthy(t, "http://"+apiAddr+"/healthz", serveDone)
	go func() { workerDone <- run(ctx, []string{"worker", "--region", "eu"}, &bytes.Buffer{}, &workerLog) }()
	waitHealthy(t, "http://"+metricsAddr+"/healthz", workerDone)

	res, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(body), "go_goroutines") {
		t.Fatalf("worker /metrics: %.200s", body)
	}
	cancel()
	for name, done := range map[string]chan error{"serve": serveDone, "worker": workerDone} {
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s returned %v", name, err)
			}
		case <-time.After(35 * time.Second):
			t.Errorf("%s did not stop", name)
		}
	}
}

// waitHealthy waits until url answers 200, failing early if the command
// behind it returns.
func waitHealthy(t *testing.T, url string, done <-chan error) {
	t.Helper()
	eventually.Succeeds(t, 20*time.Second, func() error {
		select {
		case err := <-done:
			t.Fatalf("%s: the command returned %v before it was healthy", url, err)
		default:
		}
		res, err := http.Get(url)
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("%s answered %d", url, res.StatusCode)
		}
		return nil
	})
}
