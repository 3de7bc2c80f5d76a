package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/store"
)

// Every migrated test database is a copy of one template database,
// assessd_template_<migrations hash>: CREATE DATABASE ... TEMPLATE copies a
// few megabytes of files where running the migrations took the better part
// of a second. The first process that needs a template builds it; every
// later process with the same migrations, of this checkout or another,
// reuses it, and a changed migration names a new one.

// templateLock is the advisory lock key under which one process at a time
// looks for the template and builds it if missing.
const templateLock = 0x61737364 // "assd"

var built struct {
	sync.Mutex
	name string
}

// templateName returns the name of the migrated template database,
// building it if no process built it before. It looks once per process,
// and again after forgetTemplate.
func templateName(ctx context.Context, conn *pgx.Conn) (string, error) {
	built.Lock()
	defer built.Unlock()
	if built.name == "" {
		name, err := ensureTemplate(ctx, conn)
		if err != nil {
			return "", err
		}
		built.name = name
	}
	return built.name, nil
}

// forgetTemplate makes the next templateName look for the template again:
// a checkout with other migrations may have dropped it.
func forgetTemplate() {
	built.Lock()
	defer built.Unlock()
	built.name = ""
}

func ensureTemplate(ctx context.Context, conn *pgx.Conn) (string, error) {
	name := "assessd_template_" + store.MigrationsHash()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLock); err != nil {
		return "", fmt.Errorf("storetest: template lock: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", templateLock) }()
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", fmt.Errorf("storetest: look for template: %w", err)
	}
	if exists {
		return name, nil
	}
	dropStaleTemplates(ctx, conn, name)
	// Built under a name of this process, so that a build cut short is an
	// orphan the next process drops, and renamed only once complete.
	building := ownedName("assessd_tmplbuild", randomSuffix())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return "", fmt.Errorf("storetest: create template: %w", err)
	}
	if err := store.Migrate(ctx, databaseURL(ServerURL(), building)); err != nil {
		_, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+building+" WITH (FORCE)")
		return "", fmt.Errorf("storetest: migrate template: %w", err)
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+building+" RENAME TO "+name); err != nil {
		return "", fmt.Errorf("storetest: name template: %w", err)
	}
	return name, nil
}

// keptTemplates is how many templates of other migrations stay: those of
// the other checkouts whose tests run at the same time.
const keptTemplates = 4

// dropStaleTemplates drops the templates of other migrations but the
// newest keptTemplates. One still being copied by a process of another
// checkout stays (DROP without FORCE fails while it is in use); a
// checkout whose template is gone builds it again (create).
func dropStaleTemplates(ctx context.Context, conn *pgx.Conn, keep string) {
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'assessd\_template\_%' AND datname <> $1
		ORDER BY oid DESC OFFSET $2`, keep, keptTemplates)
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, stale := range names {
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{stale}.Sanitize())
	}
}

func randomSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// databaseURL is server's URL naming database instead, in QueryMode.
func databaseURL(server, database string) string {
	u, err := url.Parse(server)
	if err != nil {
		return server
	}
	u.Path = "/" + database
	q := u.Query()
	q.Set(store.ExecModeParam, QueryMode())
	u.RawQuery = q.Encode()
	return u.String()
}
