package store

// SetRole makes db's statements switch to role instead of AppRole, so tests
// can show that CheckIsolation refuses a role that bypasses row-level
// security.
func SetRole(db *DB, role string) { db.role = role }

// Supported is the version test of CheckVersion.
var Supported = supported
