package store

import (
	"context"
	"fmt"
)

// CheckIsolation verifies that tenant statements really run under row-level
// security: the role switch takes effect and the role is neither a
// superuser nor allowed to bypass row-level security. Commands call it at
// start-up and refuse to run when it fails, because such a role would see
// every organization's rows.
func (db *DB) CheckIsolation(ctx context.Context) error {
	var (
		current           string
		super, bypass, ok bool
	)
	err := db.Unscoped().QueryRow(ctx, `
		SELECT current_user, coalesce(r.rolsuper, false), coalesce(r.rolbypassrls, false), r.rolname IS NOT NULL
		  FROM (SELECT 1) one LEFT JOIN pg_roles r ON r.rolname = current_user`).Scan(&current, &super, &bypass, &ok)
	if err != nil {
		return fmt.Errorf("store: check tenant isolation (the database user must be able to SET ROLE %s): %w", db.role, err)
	}
	switch {
	case current != db.role || !ok:
		return fmt.Errorf("store: tenant isolation is not effective: statements run as %q, not %q (the role switch did not take effect)", current, db.role)
	case super:
		return fmt.Errorf("store: tenant isolation is not effective: role %q is a superuser and bypasses row-level security; recreate it with NOSUPERUSER", current)
	case bypass:
		return fmt.Errorf("store: tenant isolation is not effective: role %q has BYPASSRLS; run ALTER ROLE %s NOBYPASSRLS", current, current)
	}
	return nil
}
