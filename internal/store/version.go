package store

import (
	"context"
	"fmt"
)

// MinServerVersion is the oldest PostgreSQL the store runs on, as
// server_version_num: 13, for pg_current_xact_id_if_assigned(), which the
// idempotency keys' commit note reads (decision 0179).
const MinServerVersion = 130000

// CheckVersion refuses a PostgreSQL older than MinServerVersion, at
// start-up rather than at the first statement that needs it.
func (db *DB) CheckVersion(ctx context.Context) error {
	var version int
	if err := db.Unscoped().QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil {
		return fmt.Errorf("store: read the server's version: %w", err)
	}
	return supported(version)
}

func supported(version int) error {
	if version < MinServerVersion {
		return fmt.Errorf("store: PostgreSQL %d.%d is too old: assessd needs %d or later", version/10000, version%10000, MinServerVersion/10000)
	}
	return nil
}
