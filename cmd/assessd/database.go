package main

import (
	"context"
	"fmt"

	"github.com/assessd/assessd/internal/store"
)

// openDatabase opens the database pool and refuses to run on a PostgreSQL
// older than the store needs, or when tenant isolation would not hold: the
// application role must not bypass row-level security.
func openDatabase(ctx context.Context, cfg config) (*store.DB, error) {
	opts, err := cfg.databaseOptions()
	if err != nil {
		return nil, err
	}
	db, err := store.Open(ctx, cfg.DatabaseURL, opts...)
	if err != nil {
		return nil, err
	}
	// The driver's own error names the host and the reason, where the
	// checks below would wrap it in the API's "retry shortly".
	if err := db.Ping(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("PostgreSQL at DATABASE_URL does not answer: %w", err)
	}
	for _, check := range []func(context.Context) error{db.CheckVersion, db.CheckIsolation} {
		if err := check(ctx); err != nil {
			db.Close()
			return nil, err
		}
	}
	return db, nil
}
