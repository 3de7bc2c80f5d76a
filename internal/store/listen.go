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
	// Down is called once per interruption, with why: when a listener
	// that was up fails, or when the first attempt does. Subscribe then
	// retries quietly, a second after the failure and backing off to
	// resubscribeMax, and calls Up when it listens again.
	Down func(err error)
}

// resubscribeMin and resubscribeMax bound the wait before listening again:
// doubling while the database stays away, so many listeners of many
// instances do not all knock every second on a database coming back.
const (
	resubscribeMin = time.Second
	resubscribeMax = 10 * time.Second
)

// Subscribe listens on s.Channel until ctx ends, listening again after
// each failure.
func (db *DB) Subscribe(ctx context.Context, s Subscription) {
	up := true
	wait := resubscribeMin
	for ctx.Err() == nil {
		err := db.Listen(ctx, s.Channel, func() {
			up, wait = true, resubscribeMin
			s.Up()
		}, s.Notify)
		if ctx.Err() != nil {
			return
		}
		if up {
			up = false
			s.Down(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, resubscribeMax)
	}
}
