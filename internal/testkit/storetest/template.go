package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/store"
)

// Every migrated test database is a copy of one template database,
// assessd_template_<migrations hash>: CREATE DATABASE ... TEMPLATE copies a
// few megabytes of files where running the migrations took the better part
// of a second. The first process that needs a template builds it; every
// later process with the same migrations, of this checkout or another,
// reuses it, and a changed migration names a new one. Each template says
// when it was built in its comment; one of other migrations is dropped
// only when staleAfter has passed since, so checkouts of different
// migrations side by side (git worktrees) keep theirs.

// templateLock is the advisory lock key under which one process at a time
// looks for the template and builds it if missing.
const templateLock = 0x61737364 // "assd"

// staleAfter is how long a template of other migrations is kept.
const staleAfter = 7 * 24 * time.Hour

var template struct {
	sync.Mutex
	name string
}

// templateName returns the name of the migrated template database,
// building it if no process built it before. A process asks the server
// once; again only when rebuild says the template it was told of is gone
// (dropped by hand, or as stale by a checkout of other migrations).
func templateName(ctx context.Context, conn *pgx.Conn, rebuild bool) (string, error) {
	template.Lock()
	defer template.Unlock()
	if template.name != "" && !rebuild {
		return template.name, nil
	}
	name, err := ensureTemplate(ctx, conn)
	if err != nil {
		return "", err
	}
	template.name = name
	return name, nil
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
	if _, err := conn.Exec(ctx, "COMMENT ON DATABASE "+building+" IS '"+time.Now().UTC().Format(time.RFC3339)+"'"); err != nil {
		return "", fmt.Errorf("storetest: date template: %w", err)
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+building+" RENAME TO "+name); err != nil {
		return "", fmt.Errorf("storetest: name template: %w", err)
	}
	return name, nil
}

// dropStaleTemplates drops the templates of other migrations built more
// than staleAfter ago. One still being copied stays (DROP without FORCE
// fails while it is in use).
func dropStaleTemplates(ctx context.Context, conn *pgx.Conn, keep string) {
	rows, err := conn.Query(ctx, `SELECT datname, coalesce(shobj_description(oid, 'pg_database'), '')
		FROM pg_database WHERE datname LIKE 'assessd\_template\_%' AND datname <> $1`, keep)
	if err != nil {
		return
	}
	type template struct{ name, built string }
	templates, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (tp template, err error) {
		return tp, row.Scan(&tp.name, &tp.built)
	})
	if err != nil {
		return
	}
	for _, tp := range templates {
		if built, err := time.Parse(time.RFC3339, tp.built); err == nil && time.Since(built) < staleAfter {
			continue
		}
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{tp.name}.Sanitize())
	}
	dropOrphanSlots(ctx, conn)
}

// dropOrphanSlots drops the slots of migrations whose template is gone,
// but those in use.
func dropOrphanSlots(ctx context.Context, conn *pgx.Conn) {
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database s WHERE datname LIKE 'assessd\_slot\_%'
		AND NOT EXISTS (SELECT FROM pg_database t WHERE t.datname = 'assessd_template_' || split_part(substr(s.datname, 14), '_', 1))`)
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, name := range names {
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize())
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
