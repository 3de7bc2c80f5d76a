// Package benchenv starts what the `make bench` commands measure against:
// a fresh migrated database opened as the application's store and, when
// asked, a Temporal dev server with a client; Close releases them.
package benchenv

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/url"
	"slices"

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

	closers []func() error
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
		env.closers = append(env.closers, drop)
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
	env.closers = append(env.closers, func() error { env.DB.Close(); return nil })
	if !o.temporal {
		return env, nil
	}
	server, err := devenv.StartTemporal(ctx, io.Discard)
	if err != nil {
		return nil, err
	}
	env.closers = append(env.closers, server.Stop)
	if env.Temporal, err = devenv.DialTemporal(server.Address); err != nil {
		return nil, err
	}
	env.closers = append(env.closers, func() error { env.Temporal.Close(); return nil })
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
	e.closers = append(e.closers, func() error { stop(); return nil })
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
// failed: a database left behind is worth a failed run.
func (e *Env) Close() error {
	var errs []error
	for _, c := range slices.Backward(e.closers) {
		errs = append(errs, c())
	}
	e.closers = nil
	return errors.Join(errs...)
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
