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
