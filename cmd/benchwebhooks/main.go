// Command benchwebhooks measures webhook delivery: N users created through
// the HTTP API by concurrent clients, each creation recording a
// user.created event that a Temporal dev server's workflow delivers, signed,
// to a local receiver. It prints deliveries per second (first event to
// last delivery) and the latency from the event to its first attempt
// reaching the receiver, each against the same figure of as many no-op
// workflows started by as many clients on the same server and worker.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	gradingactivities "github.com/assessd/assessd/activities/grading"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/egress"
	"github.com/assessd/assessd/internal/testkit/benchenv"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/workflows"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "benchwebhooks:", err)
		os.Exit(1)
	}
}

// receiver records when each message first arrived and when its event
// happened (the payload's timestamp).
type receiver struct {
	mu    sync.Mutex
	first map[string]time.Duration // webhook-id -> event to first arrival
	last  time.Time
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	var p struct {
		Timestamp time.Time `json:"timestamp"`
	}
	body, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(body, &p)
	rc.mu.Lock()
	if _, seen := rc.first[r.Header.Get("webhook-id")]; !seen {
		rc.first[r.Header.Get("webhook-id")] = now.Sub(p.Timestamp)
		rc.last = now
	}
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func run(ctx context.Context) (err error) {
	n := flag.Int("n", 500, "events (user creations) to deliver")
	clients := flag.Int("c", 16, "concurrent API clients")
	flag.Parse()
	env, err := benchenv.Start(ctx, "assessd_benchwebhooks", benchenv.WithTemporal())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Close()) }()
	db, tc := env.DB, env.Temporal

	// The receiver is on loopback: the benchmark allows private targets.
	targets := egress.Targets{AllowPrivate: true}
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	defer srv.Close()
	a, err := app.New(ctx, db, app.Config{BaseURL: srv.URL, Logger: env.Logger, Temporal: tc,
		Redis: redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}), Webhooks: targets,
		Dispatch:          workflows.DispatchOptions{Parallel: 32, Batch: 64},
		RequestsPerMinute: benchenv.Unthrottled})
	if err != nil {
		return err
	}
	handler = a.Handler
	w, err := app.NewWorker(tc, db, app.WorkerConfig{Region: "global", Provider: ai.NewBuiltin(), Fetcher: media.NewFetcher(nil, media.Options{}),
		Metrics: gradingactivities.NewMetrics(a.Metrics.Registry, a.Metrics.Org), Registry: a.Metrics.Registry, Webhooks: targets})
	if err != nil {
		return err
	}
	w.RegisterWorkflow(noop)
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()
	baseRate, baseLatencies, err := baseline(ctx, tc, *n, *clients)
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	a.Start(runCtx)

	org, err := a.Tenancy.CreateOrg(ctx, tenancy.NewOrg{Name: "Bench", Country: "US", Plan: tenancy.PlanEnterprise})
	if err != nil {
		return err
	}
	sys := tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	owner, err := a.Tenancy.CreateUser(sys, tenancy.NewUser{Email: "owner@bench.test", Name: "Owner", Role: tenancy.RoleOwner})
	if err != nil {
		return err
	}
	_, key, err := a.Tenancy.CreateAPIKey(sys, owner.ID, "bench")
	if err != nil {
		return err
	}
	rc := &receiver{first: map[string]time.Duration{}}
	hook := httptest.NewServer(rc)
	defer hook.Close()
	if err := post(srv.URL+"/webhook-endpoints", key, map[string]any{"url": hook.URL, "events": []string{"user.created"}}); err != nil {
		return err
	}

	start := time.Now()
	if err := parallel(*n, *clients, func(i int) error {
		return post(srv.URL+"/users", key, map[string]any{"email": fmt.Sprintf("u%d@bench.test", i), "name": "Student"})
	}); err != nil {
		return err
	}
	created := time.Since(start)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		rc.mu.Lock()
		got, last := len(rc.first), rc.last
		rc.mu.Unlock()
		if got >= *n {
			latencies := make([]time.Duration, 0, got)
			rc.mu.Lock()
			for _, d := range rc.first {
				latencies = append(latencies, d)
			}
			rc.mu.Unlock()
			slices.Sort(latencies)
			rate := float64(*n) / last.Sub(start).Seconds()
			fmt.Printf("%d user.created events from %d concurrent API clients, one global worker, dev server and receiver on loopback\n", *n, *clients)
			fmt.Printf("baseline: %d no-op workflows started by %d clients on the same server and worker, each timed start to completion\n\n", *n, *clients)
			fmt.Printf("events recorded (API): %.1f per second\n\n", float64(*n)/created.Seconds())
			fmt.Printf("%-40s %10s %9s %9s\n", "", "per second", "p50 ms", "p99 ms")
			fmt.Printf("%-40s %10.1f %9.0f %9.0f\n", "no-op workflows (baseline)", baseRate, ms(baseLatencies[len(baseLatencies)/2]), ms(baseLatencies[len(baseLatencies)*99/100]))
			fmt.Printf("%-40s %10.1f %9.0f %9.0f\n", "deliveries, event to first attempt", rate, ms(latencies[len(latencies)/2]), ms(latencies[len(latencies)*99/100]))
			fmt.Printf("\nratio deliveries/baseline: throughput %.2f, p99 latency %.2f\n", rate/baseRate,
				float64(latencies[len(latencies)*99/100])/float64(baseLatencies[len(baseLatencies)*99/100]))
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d deliveries after 3 minutes", got, *n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// noop is the baseline's workflow.
func noop(workflow.Context) error { return nil }

// baseline starts n no-op workflows from clients goroutines without waiting
// for them, as the API records events, then waits for each: their rate
// (first start to last completion) and each one's start to completion.
func baseline(ctx context.Context, c client.Client, n, clients int) (float64, []time.Duration, error) {
	queue, err := workflows.RegionTaskQueue("global")
	if err != nil {
		return 0, nil, err
	}
	runs := make([]client.WorkflowRun, n)
	started := make([]time.Time, n)
	start := time.Now()
	if err := parallel(n, clients, func(i int) error {
		started[i] = time.Now()
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("noop-%d", i), TaskQueue: queue}, noop)
		runs[i] = run
		return err
	}); err != nil {
		return 0, nil, err
	}
	latencies := make([]time.Duration, n)
	var last time.Time
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i, run := range runs {
		wg.Go(func() {
			if err := run.Get(ctx, nil); err != nil {
				errs <- err
				return
			}
			now := time.Now()
			latencies[i] = now.Sub(started[i])
			mu.Lock()
			if now.After(last) {
				last = now
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, nil, err
	}
	slices.Sort(latencies)
	return float64(n) / last.Sub(start).Seconds(), latencies, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func post(url, key string, body any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, msg)
	}
	return nil
}

// parallel runs fn for 0..n-1 on clients goroutines and returns the first
// error.
func parallel(n, clients int, fn func(i int) error) error {
	next := make(chan int)
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	go func() {
		defer close(next)
		for i := range n {
			select {
			case next <- i:
			case err := <-errs:
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	return <-errs
}
