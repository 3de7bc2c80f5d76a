// Package benchenv starts what the `make bench` commands measure against:
// a fresh migrated database opened as the application's store and, when
// asked, a Temporal dev server with a client; Close releases them.
package benchenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"

	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/devenv"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
)

// Env is one benchmark's environment.
type Env struct {
	// DB is the application's store on the benchmark's database.
	DB *store.DB
	// URL reaches the database as its owner, for seeding and baselines.
	URL string
	// Temporal is nil unless Start was asked for it.
	Temporal client.Client
	// Logger discards: benchmarks print their own figures only.
	Logger *slog.Logger

	// mu guards what Close releases: an interrupt closes the environment
	// from another goroutine while Start or StartApp may still add to it.
	mu       sync.Mutex
	closed   bool
	closeErr error
	closers  []func() error
}

// Option configures Start.
type Option func(*options)

type options struct{ temporal bool }

// WithTemporal also starts a Temporal dev server and dials it.
func WithTemporal() Option { return func(o *options) { o.temporal = true } }

// Start creates database prefix_<random> and what opts ask for. It also
// silences the default logger, which libraries log their set-up to.
func Start(ctx context.Context, prefix string, opts ...Option) (_ *Env, err error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	env := &Env{Logger: slog.New(slog.DiscardHandler)}
	slog.SetDefault(env.Logger)
	defer func() {
		if err != nil {
			err = errors.Join(err, env.Close())
		}
	}()
	dbURL, drop, err := storetest.Create(ctx, prefix)
	if drop != nil {
		env.onClose(drop, closeOnSignal(env.Close, exitProcess))
	}
	if err != nil {
		return nil, err
	}
	// Measured is what a direct deployment runs: the query mode store.Open
	// picks for a URL that sets none.
	if env.URL, err = withoutQueryMode(dbURL); err != nil {
		return nil, err
	}
	if env.DB, err = store.Open(ctx, env.URL); err != nil {
		return nil, err
	}
	env.onClose(func() error { env.DB.Close(); return nil })
	if !o.temporal {
		return env, nil
	}
	server, err := devenv.StartTemporal(ctx, io.Discard)
	if err != nil {
		return nil, err
	}
	env.onClose(server.Stop)
	if env.Temporal, err = devenv.DialTemporal(server.Address); err != nil {
		return nil, err
	}
	env.onClose(func() error { env.Temporal.Close(); return nil })
	return env, nil
}

// StartApp builds the app under measurement on the environment's database,
// serving at baseURL (its OIDC issuer): rate limits in Redis under a prefix
// of its own, and the request quota checked on every request as in
// production but set high enough that the load is never throttled. Its
// background work runs until Close.
func (e *Env) StartApp(ctx context.Context, baseURL string) (*app.App, error) {
	a, err := app.New(ctx, e.DB, app.Config{BaseURL: baseURL, Logger: e.Logger,
		Redis: redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}), RateLimitPrefix: "bench:" + ids.New("rl_") + ":",
		RequestsPerMinute: Unthrottled})
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(ctx)
	e.onClose(func() error { stop(); return nil })
	a.Start(ctx)
	return a, nil
}

// Analyze gathers the planner's statistics of every table, as
// autovacuum does within a minute of a deployment's first rows. A database
// made for one run has none until then, and the plans PostgreSQL caches
// for the application's prepared statements meanwhile fit empty tables:
// an answers lookup by result id then scans the organization's index
// (decision 0135).
func (e *Env) Analyze(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, e.URL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "ANALYZE")
	return err
}

// Unthrottled is the request quota of every plan in the benchmarks: checked
// on every request as in production, and high enough that no load reaches
// it (app.Config.RequestsPerMinute).
func Unthrottled(string) int { return 1_000_000_000 }

// Close releases everything Start started, newest first, and reports what
// failed: a database left behind is worth a failed run. It runs once,
// whether the run ends or is interrupted.
func (e *Env) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.closed {
		var errs []error
		for _, c := range slices.Backward(e.closers) {
			errs = append(errs, c())
		}
		e.closed, e.closers, e.closeErr = true, nil, errors.Join(errs...)
	}
	return e.closeErr
}

// onClose adds cs to what Close releases.
func (e *Env) onClose(cs ...func() error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closers = append(e.closers, cs...)
}

// exitProcess ends an interrupted run; tests replace it.
var exitProcess = os.Exit

// closeOnSignal has an interrupted run (Ctrl-C, a CI job's SIGTERM) call
// closeAll before it exits, so that its database, which holds up to
// 100,000 results, is not left behind. The returned function stops
// listening.
func closeOnSignal(closeAll func() error, exit func(code int)) (stop func() error) {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-signals:
			signal.Stop(signals)
			if err := closeAll(); err != nil {
				fmt.Fprintln(os.Stderr, "benchmark interrupted; releasing its environment:", err)
			}
			exit(128 + int(s.(syscall.Signal)))
		case <-done:
		}
	}()
	return func() error {
		signal.Stop(signals)
		close(done)
		return nil
	}
}

func withoutQueryMode(dbURL string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Del(store.ExecModeParam)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
