package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Listen runs until ctx ends or the connection fails: it LISTENs on channel
// on a connection of its own to the direct (unpooled) URL, calls ready
// once listening, and calls onNotify for every notification. Callers loop
// on it to reconnect. A transaction-pooling PgBouncer would hand the
// subscribed session to other clients, so the pool is never used for this.
func (db *DB) Listen(ctx context.Context, channel string, ready, onNotify func()) error {
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
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		onNotify()
	}
}
