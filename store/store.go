// Package store owns the PostgreSQL connection pool, the embedded schema
// migrations and the tenant-scoped query helpers every domain package uses.
package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// AppRole is the PostgreSQL role every pooled connection switches to. It owns
// no table and cannot bypass row-level security.
const AppRole = "assessd_app"

// ErrNoTenant is returned when a tenant-owned query runs without an
// organization in its context: such queries fail closed.
var ErrNoTenant = errors.New("store: no organization in context")

// Querier runs SQL. A transaction and a tenant-scoped single-statement
// querier both satisfy it, so domain code does not care which it has.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// DB is the application's handle on PostgreSQL.
type DB struct {
	pool *pgxpool.Pool
}

// Open connects to url. Every connection runs as AppRole, so row-level
// security applies even when url names a superuser.
func Open(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: parse database url: %w", err)
	}
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "SET ROLE "+AppRole)
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	return &DB{pool: pool}, nil
}

// Close closes every connection of the pool.
func (db *DB) Close() { db.pool.Close() }

// Ping checks that PostgreSQL answers.
func (db *DB) Ping(ctx context.Context) error { return db.pool.Ping(ctx) }

// Stat reports pool statistics for metrics.
func (db *DB) Stat() *pgxpool.Stat { return db.pool.Stat() }

// Unscoped returns a querier without a tenant. Row-level security still
// applies, so it sees no tenant row; it serves the SECURITY DEFINER lookups
// that run before the tenant is known (authentication).
func (db *DB) Unscoped() Querier { return db.pool }

type orgKey struct{}
type txKey struct{}

// WithOrg returns a context whose queries are scoped to organization orgID.
func WithOrg(ctx context.Context, orgID string) context.Context {
	return context.WithValue(ctx, orgKey{}, orgID)
}

// OrgID returns the organization ctx is scoped to.
func OrgID(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(orgKey{}).(string)
	return id, ok && id != ""
}

// Q returns the querier for ctx: the transaction opened by Tx if there is
// one, otherwise a querier that runs each statement in its own implicit
// transaction scoped to ctx's organization. Without an organization every
// statement fails with ErrNoTenant.
func (db *DB) Q(ctx context.Context) Querier {
	if tx, ok := ctx.Value(txKey{}).(pgx.Tx); ok {
		return tx
	}
	org, ok := OrgID(ctx)
	if !ok {
		return failed{ErrNoTenant}
	}
	return scoped{pool: db.pool, org: org}
}

// Tx runs fn in one transaction scoped to ctx's organization; fn's context
// carries the transaction, so nested Tx calls and Q join it. The transaction
// commits when fn returns nil and rolls back otherwise.
func (db *DB) Tx(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, ok := ctx.Value(txKey{}).(pgx.Tx); ok {
		return fn(ctx)
	}
	org, ok := OrgID(ctx)
	if !ok {
		return ErrNoTenant
	}
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, setOrgSQL, org); err != nil {
			return err
		}
		return fn(context.WithValue(ctx, txKey{}, tx))
	})
}

// setOrgSQL scopes the current transaction to one organization; the
// row-level security policies read it through app_org_id().
const setOrgSQL = "SELECT set_config('app.org_id', $1, true)"

// scoped sends the scope and the statement as one pipelined batch: a batch
// is one implicit transaction, so the transaction-local setting holds for
// the statement, and it costs a single network round trip.
type scoped struct {
	pool *pgxpool.Pool
	org  string
}

func (s scoped) send(ctx context.Context, sql string, args []any) pgx.BatchResults {
	b := &pgx.Batch{}
	b.Queue(setOrgSQL, s.org)
	b.Queue(sql, args...)
	return s.pool.SendBatch(ctx, b)
}

func (s scoped) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	br := s.send(ctx, sql, args)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if err != nil {
		return tag, err
	}
	return tag, br.Close()
}

func (s scoped) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	br := s.send(ctx, sql, args)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, batch: br}, nil
}

func (s scoped) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := s.Query(ctx, sql, args...)
	if err != nil {
		return failedRow{err}
	}
	return rowOf{rows}
}

// batchRows releases the batch (and its connection) when the rows close.
type batchRows struct {
	pgx.Rows
	batch  pgx.BatchResults
	closed bool
	err    error
}

func (r *batchRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	r.err = r.batch.Close()
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// rowOf adapts rows to pgx.Row with pgx's QueryRow semantics.
type rowOf struct{ rows pgx.Rows }

func (r rowOf) Scan(dest ...any) error {
	defer r.rows.Close()
	if !r.rows.Next() {
		r.rows.Close()
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

type failed struct{ err error }

func (f failed) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, f.err
}
func (f failed) Query(context.Context, string, ...any) (pgx.Rows, error) { return nil, f.err }
func (f failed) QueryRow(context.Context, string, ...any) pgx.Row        { return failedRow(f) }

type failedRow struct{ err error }

func (f failedRow) Scan(...any) error { return f.err }
