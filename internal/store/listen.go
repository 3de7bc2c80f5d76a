package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Listen runs until ctx ends or the connection fails: it LISTENs on channel
// on a connection of its own to the direct (unpooled) URL, calls ready
// once listening, and calls onNotify with the payload of every
// notification. A transaction-pooling PgBouncer would hand the subscribed
// session to other clients, so the pool is never used for this.
func (db *DB) Listen(ctx context.Context, channel string, ready func(), onNotify func(payload string)) error {
	// pgxpool's parser drops the pool's own parameters (pool_max_conns...),
	// which PostgreSQL would refuse as unknown settings.
	cfg, err := pgxpool.ParseConfig(db.directURL)
	if err != nil {
		return fmt.Errorf("listen %s: %w", channel, err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return fmt.Errorf("listen %s: connect: %w", channel, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return fmt.Errorf("listen %s: %w", channel, err)
	}
	ready()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		onNotify(n.Payload)
	}
}

// Subscription is what Subscribe tells its caller about a channel.
type Subscription struct {
	Channel string
	// Up is called each time the listener is connected and listening:
	// notifications sent while it was down are lost, so a caller catches
	// up here.
	Up func()
	// Notify is called with the payload of every notification.
	Notify func(payload string)
	// Down is called when the listener failed, with why; it retries a
	// second later.
	Down func(err error)
}

// resubscribeAfter is how long Subscribe waits before listening again.
const resubscribeAfter = time.Second

// Subscribe listens on s.Channel until ctx ends, listening again after
// each failure.
func (db *DB) Subscribe(ctx context.Context, s Subscription) {
	for ctx.Err() == nil {
		err := db.Listen(ctx, s.Channel, s.Up, s.Notify)
		if ctx.Err() != nil {
			return
		}
		s.Down(err)
		select {
		case <-ctx.Done():
		case <-time.After(resubscribeAfter):
		}
	}
}
