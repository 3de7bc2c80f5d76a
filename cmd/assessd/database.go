package main

import (
	"context"

	"github.com/assessd/assessd/internal/store"
)

// openDatabase opens the database pool and refuses to run when tenant
// isolation would not hold: the application role must not bypass
// row-level security.
func openDatabase(ctx context.Context, cfg config) (*store.DB, error) {
	wait, err := cfg.databaseAcquireTimeout()
	if err != nil {
		return nil, err
	}
	db, err := store.Open(ctx, cfg.DatabaseURL, store.WithDirectURL(cfg.directDatabaseURL()), store.WithAcquireTimeout(wait))
	if err != nil {
		return nil, err
	}
	if err := db.CheckIsolation(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}
