package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	gradingactivities "github.com/assessd/assessd/activities/grading"
	scanningactivities "github.com/assessd/assessd/activities/scanning"
	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/membudget"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/observability/temporalmetrics"
	"github.com/assessd/assessd/workflows"
)

// runWorker runs one AI region's grading worker: it polls only that
// region's task queue and talks only to that region's AI endpoint. It
// serves /metrics and /healthz on ASSESSD_METRICS_ADDR, so it runs beside
// serve with the same environment.
func runWorker(ctx context.Context, args []string, stderr io.Writer) error {
	var cfg config
	fs := cfg.newFlagSet("worker", stderr)
	region := fs.String("region", "", "the AI region whose work this worker runs: eu or global")
	if err := cfg.parse(fs, args); err != nil {
		return err
	}
	if *region != "eu" && *region != "global" {
		fmt.Fprintln(stderr, "--region must be eu or global")
		return errUsage
	}
	if err := cfg.requireDatabase(); err != nil {
		return err
	}
	if cfg.TemporalAddress == "" {
		return errors.New("TEMPORAL_ADDRESS (or --temporal-address) is required")
	}
	log := cfg.logger(stderr)
	slog.SetDefault(log)
	db, err := openDatabase(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	metrics := observability.NewMetrics()
	metrics.RegisterPool(db)
	metrics.RegisterOrgInfo(app.OrgInfoLookup(db))
	tc, err := dialTemporal(cfg, log, temporalmetrics.NewHandler(metrics.Registry))
	if err != nil {
		return err
	}
	defer tc.Close()
	memory, err := cfg.workerMemory()
	if err != nil {
		return err
	}
	wcfg, err := workerConfig(cfg, *region, metrics, gradingactivities.NewMetrics(metrics.Registry, metrics.Org), memory)
	if err != nil {
		return err
	}
	w, err := app.NewWorker(tc, db, wcfg)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"status":"ok"}`)) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	log.Info("worker started", "region", *region, "metrics", ln.Addr().String())
	defer dispatchRegion(ctx, tc, db, metrics.Registry, *region)()
	stop := make(chan any)
	go func() { <-ctx.Done(); close(stop) }()
	return w.Run(stop)
}

// dispatchRegion runs region's outbox dispatcher on the client of the
// region's worker until ctx ends, so the workflows it starts take their
// first task on that worker (decision 0130); wait waits for it to stop.
func dispatchRegion(ctx context.Context, c client.Client, db *store.DB, reg prometheus.Registerer, region string) (wait func()) {
	d := app.NewDispatcher(c, db, reg, workflows.DispatchOptions{Region: region})
	var running sync.WaitGroup
	running.Go(func() { d.Run(ctx) })
	return running.Wait
}

// workerConfig assembles a region's provider, CDN fetcher and metrics,
// with the process's memory budget.
func workerConfig(cfg config, region string, metrics *observability.Metrics, grading *gradingactivities.Metrics, memory *membudget.Budget) (app.WorkerConfig, error) {
	provider, err := cfg.aiProvider(region, metrics.Registry)
	if err != nil {
		return app.WorkerConfig{}, err
	}
	targets, err := cfg.webhookTargets()
	if err != nil {
		return app.WorkerConfig{}, err
	}
	return app.WorkerConfig{
		Region:   region,
		Provider: provider,
		Fetcher:  media.NewFetcher(cfg.mediaPrefixes(), media.Options{Registerer: metrics.Registry}),
		Metrics:  grading,
		Registry: metrics.Registry,
		OrgLabel: metrics.Org,
		// Shared collectors: both regions of assessd dev use one registry.
		ScanMetrics: scanningactivities.NewMetrics(metrics.Registry, metrics.Org),
		Webhooks:    targets,
		Memory:      memory,
	}, nil
}

// startWorkers runs both regions' workers and dispatchers in this process
// (assessd dev).
func startWorkers(ctx context.Context, p *process) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	var workers []worker.Worker
	var dispatchers []func()
	stop = func() {
		cancel()
		for _, wait := range dispatchers {
			wait()
		}
		for _, w := range workers {
			w.Stop()
		}
	}
	grading := gradingactivities.NewMetrics(p.Metrics.Registry, p.Metrics.Org)
	memory, err := p.cfg.workerMemory()
	if err != nil {
		return nil, err
	}
	for _, region := range []string{"eu", "global"} {
		wcfg, err := workerConfig(p.cfg, region, p.Metrics, grading, memory)
		if err != nil {
			stop()
			return nil, err
		}
		w, err := app.NewWorker(p.temporal, p.db, wcfg)
		if err == nil {
			err = w.Start()
		}
		if err != nil {
			stop()
			return nil, err
		}
		workers = append(workers, w)
		dispatchers = append(dispatchers, dispatchRegion(ctx, p.temporal, p.db, p.Metrics.Registry, region))
	}
	return stop, nil
}
