package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
)

// TestStarvedPoolAnswersUnavailable: while every connection of the pool is
// held, a statement, a batch and a transaction each wait the acquire
// timeout and fail DATABASE_UNAVAILABLE instead of waiting as long as
// their caller would; a caller that gives up first gets its own error;
// once a connection is free again, the same statement runs.
func TestStarvedPoolAnswersUnavailable(t *testing.T) {
	const wait = 200 * time.Millisecond
	db, err := store.Open(context.Background(), storetest.NewURL(t)+"&pool_max_conns=1", store.WithAcquireTimeout(wait))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := store.WithOrg(context.Background(), "org-starved")

	held, release, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		done <- db.Tx(ctx, func(context.Context) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held

	attempts := map[string]func(context.Context) error{
		"statement": func(ctx context.Context) error {
			_, err := db.Q(ctx).Exec(ctx, "SELECT 1")
			return err
		},
		"batch": func(ctx context.Context) error {
			b := &pgx.Batch{}
			b.Queue("SELECT 1")
			return db.SendBatch(ctx, b)
		},
		"transaction": func(ctx context.Context) error {
			return db.Tx(ctx, func(ctx context.Context) error {
				_, err := db.Q(ctx).Exec(ctx, "SELECT 1")
				return err
			})
		},
	}
	for name, attempt := range attempts {
		start := time.Now()
		err := attempt(ctx)
		took := time.Since(start)
		if e, ok := errs.As(err); !ok || e.Kind != errs.KindUnavailable || e.Reason != "DATABASE_UNAVAILABLE" {
			t.Fatalf("%s on a starved pool: %v, want DATABASE_UNAVAILABLE", name, err)
		}
		if took < wait || took > wait+2*time.Second {
			t.Errorf("%s failed after %v, want about %v", name, took, wait)
		}
	}

	impatient, cancel := context.WithTimeout(ctx, wait/4)
	defer cancel()
	if err := attempts["statement"](impatient); !errors.Is(err, context.DeadlineExceeded) || errs.Is(err, errs.KindUnavailable) {
		t.Fatalf("a caller that gave up: %v, want its own deadline", err)
	}

	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := attempts["statement"](ctx); err != nil {
		t.Fatalf("after the pool recovered: %v", err)
	}
}

// TestStatementAndLockTimeouts: a statement that runs past the statement
// timeout, or waits past the lock timeout for a lock another session
// holds, fails DATABASE_UNAVAILABLE after about that long, whether alone
// or in a transaction, and frees its connection; statements within the
// bounds run.
func TestStatementAndLockTimeouts(t *testing.T) {
	const statementTimeout, lockTimeout = 300 * time.Millisecond, 100 * time.Millisecond
	url := storetest.NewURL(t)
	db, err := store.Open(context.Background(), url, store.WithStatementTimeout(statementTimeout), store.WithLockTimeout(lockTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := store.WithOrg(context.Background(), "org-timeouts")

	holder, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Close(context.Background()) }()
	if _, err := holder.Exec(context.Background(), `SELECT pg_advisory_lock(4242)`); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name, sql string
		bound     time.Duration
	}{
		{"a long statement", `SELECT pg_sleep(5)`, statementTimeout},
		{"a wait for a held lock", `SELECT pg_advisory_xact_lock(4242)`, lockTimeout},
	} {
		for how, run := range map[string]func() error{
			"alone": func() error {
				_, err := db.Q(ctx).Exec(ctx, c.sql)
				return err
			},
			"in a transaction": func() error {
				return db.Tx(ctx, func(ctx context.Context) error {
					if _, err := db.Q(ctx).Exec(ctx, `SELECT 1`); err != nil {
						return err
					}
					_, err := db.Q(ctx).Exec(ctx, c.sql)
					return err
				})
			},
		} {
			start := time.Now()
			err := run()
			took := time.Since(start)
			if e, ok := errs.As(err); !ok || e.Reason != "DATABASE_UNAVAILABLE" {
				t.Fatalf("%s, %s: %v, want DATABASE_UNAVAILABLE", c.name, how, err)
			}
			if took < c.bound || took > c.bound+2*time.Second {
				t.Errorf("%s, %s: failed after %v, want about %v", c.name, how, took, c.bound)
			}
		}
	}
	if _, err := db.Q(ctx).Exec(ctx, `SELECT pg_sleep(0.05)`); err != nil {
		t.Fatalf("a statement within the bounds: %v", err)
	}
}
