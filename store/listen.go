package store

import (
	"context"
	"fmt"
)

// Listen runs until ctx ends or the connection fails: it LISTENs on channel
// on a dedicated connection, calls ready once listening, and calls
// onNotify for every notification. Callers loop on it to reconnect.
func (db *DB) Listen(ctx context.Context, channel string, ready, onNotify func()) error {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection leaves the pool: it stays subscribed until it closes.
	pgConn := conn.Hijack()
	defer pgConn.Close(context.Background())
	if _, err := pgConn.Exec(ctx, "LISTEN "+quoteIdent(channel)); err != nil {
		return fmt.Errorf("listen %s: %w", channel, err)
	}
	ready()
	for {
		if _, err := pgConn.WaitForNotification(ctx); err != nil {
			return err
		}
		onNotify()
	}
}

func quoteIdent(s string) string { return `"` + s + `"` }
