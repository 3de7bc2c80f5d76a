package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"

	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/platform/clientaddr"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/workflows"
)

func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return observability.NewLogger(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

func serve(ctx context.Context, args []string, stderr io.Writer) error {
	var cfg config
	if err := cfg.parse(cfg.newFlagSet("serve", stderr), args); err != nil {
		return err
	}
	if err := cfg.requireDatabase(); err != nil {
		return err
	}
	log := cfg.logger(stderr)
	slog.SetDefault(log)
	a, err := newProcess(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.close()
	return a.serve(ctx, nil)
}

// fallbackGrace is how long serve's outbox dispatcher leaves a row to the
// dispatcher of a worker of the row's region, which starts the workflow on
// itself (decision 0130); serve starts what no worker took, at its next
// sweep after the grace.
const fallbackGrace = 2 * time.Second

// process is the running server: its configuration, database and the
// wired application.
type process struct {
	cfg      config
	log      *slog.Logger
	db       *store.DB
	temporal client.Client
	*app.App
}

func newProcess(ctx context.Context, cfg config, log *slog.Logger) (*process, error) {
	if cfg.TemporalAddress == "" {
		return nil, errors.New("TEMPORAL_ADDRESS (or --temporal-address) is required: grading runs on Temporal")
	}
	db, err := openDatabase(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.RedisURL == "" {
		db.Close()
		return nil, errors.New("REDIS_URL (or --redis-url) is required: embed sessions live in Redis")
	}
	redisOpts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	proxies, err := clientaddr.Parse(cfg.TrustedProxies)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("ASSESSD_TRUSTED_PROXIES: %w", err)
	}
	// Lazy: serve starts while Temporal is away; workflow starts wait in
	// the outbox until it answers.
	opts, err := cfg.temporalOptions(log, nil)
	if err != nil {
		db.Close()
		return nil, err
	}
	targets, err := cfg.webhookTargets()
	if err != nil {
		db.Close()
		return nil, err
	}
	maxUpload, err := cfg.mediaMaxUploadBytes()
	if err != nil {
		db.Close()
		return nil, err
	}
	tc, err := client.NewLazyClient(opts)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("temporal: %w", err)
	}
	a, err := app.New(ctx, db, app.Config{BaseURL: cfg.BaseURL, Logger: log, Temporal: tc, Redis: redis.NewClient(redisOpts),
		TrustedProxies: proxies, MediaCDN: cfg.mediaPrefixes(), MediaMaxUploadBytes: maxUpload, Webhooks: targets,
		Dispatch: workflows.DispatchOptions{Grace: fallbackGrace}})
	if err != nil {
		tc.Close()
		db.Close()
		return nil, err
	}
	return &process{cfg: cfg, log: log, db: db, temporal: tc, App: a}, nil
}

// dialTemporal connects to the configured Temporal frontend and checks
// (or creates) the namespace; the SDK's metrics go to metrics (nil: none).
func dialTemporal(cfg config, log *slog.Logger, metrics client.MetricsHandler) (client.Client, error) {
	opts, err := cfg.temporalOptions(log, metrics)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cfg.ensureNamespace(ctx, opts); err != nil {
		return nil, err
	}
	c, err := client.Dial(opts)
	if err != nil {
		return nil, fmt.Errorf("temporal: %w", err)
	}
	return c, nil
}

func (a *process) close() {
	_ = a.App.Close()
	a.temporal.Close()
	a.db.Close()
}

// serve listens on the configured address until ctx ends, then stops
// accepting connections and lets in-flight requests finish (up to 30s).
// ready, if not nil, is called once the listener is open.
func (a *process) serve(ctx context.Context, ready func()) error {
	ln, err := net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           a.Handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
	a.Start(ctx)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	a.log.Info("listening", "addr", ln.Addr().String(), "base_url", a.cfg.BaseURL)
	if ready != nil {
		ready()
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	a.log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func migrateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg config
	if err := cfg.parse(cfg.newFlagSet("migrate", stderr), args); err != nil {
		return err
	}
	if err := cfg.requireDatabase(); err != nil {
		return err
	}
	if err := store.Migrate(ctx, cfg.directDatabaseURL()); err != nil {
		return err
	}
	return writeJSON(stdout, map[string]string{"status": "migrated"})
}
