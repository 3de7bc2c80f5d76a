// Package store owns the PostgreSQL connection pool, the embedded schema
// migrations and the tenant-scoped query helpers every domain package uses.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/assessd/assessd/internal/platform/errs"
)

// AppRole is the PostgreSQL role every pooled connection switches to. It owns
// no table and cannot bypass row-level security.
const AppRole = "assessd_app"

// ErrNoTenant is returned when a tenant-owned query runs without an
// organization in its context: such queries fail closed.
var ErrNoTenant = errors.New("store: no organization in context")

// ErrBesideTx is returned for a statement sent on a connection of its own
// while its context's transaction holds one (Unscoped inside Tx): as many
// concurrent requests doing so as the pool has connections would each
// hold one and wait for another forever. Inside a transaction, statements
// go through Q(ctx).
var ErrBesideTx = errors.New("store: a statement beside the transaction its context carries")

// Querier runs SQL. A transaction and a tenant-scoped single-statement
// querier both satisfy it, so domain code does not care which it has.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// DB is the application's handle on PostgreSQL. It keeps no state in
// database sessions: every statement carries its role and organization as
// transaction-local settings, so it runs correctly behind a
// transaction-pooling PgBouncer, where consecutive statements of one client
// may land on different server connections (decision 0040).
type DB struct {
	pool *pgxpool.Pool
	// directURL reaches PostgreSQL without a transaction pooler, for the
	// session-bound work: LISTEN.
	directURL string
	// role is the role every statement switches to: AppRole, except in
	// tests of the start-up check.
	role string
	// tracer, when set, sees every statement the pool sends.
	tracer pgx.QueryTracer
	// acquireTimeout bounds the wait for a connection of the pool;
	// statementTimeout and lockTimeout bound each statement and its waits
	// for locks, through scope.
	acquireTimeout, statementTimeout, lockTimeout time.Duration
	// scope is the first statement of every transaction: scopeSQL with
	// the timeouts.
	scope string
}

// Option configures Open.
type Option func(*DB)

// WithDirectURL names an unpooled URL (no transaction-pooling PgBouncer in
// between) for the work that needs a session of its own: LISTEN. Without
// it, the pool's URL is used.
func WithDirectURL(url string) Option {
	return func(db *DB) {
		if url != "" {
			db.directURL = url
		}
	}
}

// WithTracer has every connection of the pool report its statements to t
// (which may also implement pgx.BatchTracer); tests count round trips with
// it.
func WithTracer(t pgx.QueryTracer) Option {
	return func(db *DB) { db.tracer = t }
}

// DefaultAcquireTimeout is how long a statement or transaction waits for a
// connection of the pool unless WithAcquireTimeout says otherwise: far
// above the milliseconds a busy but healthy pool makes anyone wait, far
// below the time a client or proxy gives up.
const DefaultAcquireTimeout = 5 * time.Second

// WithAcquireTimeout bounds how long a statement or transaction waits for
// a connection of the pool (d > 0). A wait that runs out means every
// connection is held by slow work, or PostgreSQL cannot be reached: the
// caller gets DATABASE_UNAVAILABLE (503) instead of waiting as long as its
// client does, holding its goroutine and request slot.
func WithAcquireTimeout(d time.Duration) Option {
	return func(db *DB) {
		if d > 0 {
			db.acquireTimeout = d
		}
	}
}

// DefaultStatementTimeout and DefaultLockTimeout bound a statement's run
// and its wait for a lock unless WithStatementTimeout or WithLockTimeout
// say otherwise. No request or activity has a statement that legitimately
// runs for seconds (lists are paged, imports are many small statements),
// and a lock held for seconds is a stuck transaction: waiting on it would
// hold a connection of the pool per waiting request.
const (
	DefaultStatementTimeout = 30 * time.Second
	DefaultLockTimeout      = 5 * time.Second
)

// WithStatementTimeout bounds each statement's run (at least a
// millisecond, PostgreSQL's unit); one that runs longer fails
// DATABASE_UNAVAILABLE.
func WithStatementTimeout(d time.Duration) Option {
	return func(db *DB) {
		if d >= time.Millisecond {
			db.statementTimeout = d
		}
	}
}

// WithLockTimeout bounds each statement's wait for a lock (at least a
// millisecond): a row, a table or an advisory lock another transaction
// holds. A wait that runs out fails DATABASE_UNAVAILABLE.
func WithLockTimeout(d time.Duration) Option {
	return func(db *DB) {
		if d >= time.Millisecond {
			db.lockTimeout = d
		}
	}
}

// ExecModeParam is the connection-URL parameter choosing how pgx sends
// statements. Unless a URL sets it, Open picks by whether a pooler stands
// in front (decision 0122): "exec" (no named prepared statements,
// parameters typed by the server: what a transaction-pooling PgBouncer
// 1.18 supports) when WithDirectURL names a URL other than the pool's,
// "cache_statement" (statements prepared once per connection, so
// PostgreSQL parses and plans them once) when the pool's URL is direct.
const ExecModeParam = "default_query_exec_mode"

// Open connects to url. Every statement runs as AppRole, so row-level
// security applies even when url names a superuser.
func Open(ctx context.Context, url string, opts ...Option) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: parse database url: %w", err)
	}
	db := &DB{directURL: url, role: AppRole, acquireTimeout: DefaultAcquireTimeout,
		statementTimeout: DefaultStatementTimeout, lockTimeout: DefaultLockTimeout}
	for _, o := range opts {
		o(db)
	}
	db.scope = fmt.Sprintf(scopeSQL, db.statementTimeout.Milliseconds(), db.lockTimeout.Milliseconds())
	if !strings.Contains(url, ExecModeParam+"=") {
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
		if db.directURL != url {
			cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
		}
	}
	cfg.ConnConfig.Tracer = db.tracer
	if db.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	return db, nil
}

// Close closes every connection of the pool.
func (db *DB) Close() { db.pool.Close() }

// Ping checks that PostgreSQL answers.
func (db *DB) Ping(ctx context.Context) error { return db.pool.Ping(ctx) }

// Stat reports pool statistics for metrics.
func (db *DB) Stat() *pgxpool.Stat { return db.pool.Stat() }

// Unscoped returns a querier scoped to no tenant. Row-level security still
// applies, so it sees no tenant row; it serves the SECURITY DEFINER lookups
// that run before the tenant is known (authentication) and the tables that
// belong to no tenant.
func (db *DB) Unscoped() Querier { return translating{scoped{db: db}} }

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

// InTx reports whether ctx carries a transaction opened by Tx.
func InTx(ctx context.Context) bool {
	_, ok := ctx.Value(txKey{}).(*tx)
	return ok
}

// Q returns the querier for ctx: the transaction opened by Tx if there is
// one, otherwise a querier that runs each statement in its own implicit
// transaction scoped to ctx's organization. Without an organization every
// statement fails with ErrNoTenant. Either reports constraint errors as
// the store's sentinels (ErrUniqueViolation, ...).
func (db *DB) Q(ctx context.Context) Querier {
	if t, ok := ctx.Value(txKey{}).(*tx); ok {
		return translating{t}
	}
	org, ok := OrgID(ctx)
	if !ok {
		return failed{ErrNoTenant}
	}
	return translating{scoped{db: db, org: org}}
}

// Tx runs fn in one transaction scoped to ctx's organization; fn's context
// carries the transaction, so nested Tx calls and Q join it. The transaction
// commits when fn returns nil and rolls back otherwise. BEGIN and the scope
// go as one batch, and the COMMIT carries what SendAtCommit queued: a
// transaction costs two round trips more than its statements.
func (db *DB) Tx(ctx context.Context, fn func(ctx context.Context) error) error {
	if InTx(ctx) {
		return fn(ctx)
	}
	org, ok := OrgID(ctx)
	if !ok {
		return ErrNoTenant
	}
	conn, err := db.acquire(ctx)
	if err != nil {
		return err
	}
	// Release closes, rather than pools, a connection whose transaction
	// did not end (fn panicked, ROLLBACK failed).
	defer conn.Release()
	begin := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, 2)}
	begin.Queue("BEGIN")
	begin.Queue(db.scope, db.role, org)
	if err := conn.SendBatch(ctx, begin).Close(); err != nil {
		if conn.Conn().PgConn().TxStatus() != 'I' {
			_, _ = conn.Exec(ctx, "ROLLBACK")
		}
		return translate(err)
	}
	t := &tx{conn: conn}
	if err := fn(context.WithValue(ctx, txKey{}, t)); err != nil {
		t.rollback(ctx)
		return translate(err)
	}
	return translate(t.commit(ctx))
}

// tx is a transaction of Tx on its connection.
type tx struct {
	conn *pgxpool.Conn
	// atCommit are the statements SendAtCommit queued to go with the
	// COMMIT.
	atCommit []*pgx.QueuedQuery
}

func (t *tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.conn.Exec(ctx, sql, args...)
}

func (t *tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.conn.Query(ctx, sql, args...)
}

func (t *tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.conn.QueryRow(ctx, sql, args...)
}

func (t *tx) sendBatch(ctx context.Context, b *pgx.Batch) error {
	return t.conn.SendBatch(ctx, b).Close()
}

// commit sends the statements queued for the COMMIT, the context's commit
// note and the COMMIT in one batch. PostgreSQL answers the COMMIT of a
// transaction that a failed statement aborted with a rollback, not an
// error; that is reported as pgx reports it. When a queued statement
// fails, PostgreSQL skips the COMMIT and the transaction is rolled back
// here.
func (t *tx) commit(ctx context.Context) error {
	b := &pgx.Batch{QueuedQueries: t.atCommit}
	queueCommitNote(ctx, b)
	b.Queue("COMMIT").Exec(func(tag pgconn.CommandTag) error {
		if tag.String() == "ROLLBACK" {
			return pgx.ErrTxCommitRollback
		}
		return nil
	})
	err := t.conn.SendBatch(ctx, b).Close()
	if err != nil && t.conn.Conn().PgConn().TxStatus() != 'I' {
		t.rollback(ctx)
	}
	return err
}

// rollback ends what was sent. Should it fail, the connection is left in
// its transaction and Release closes it, which ends it too.
func (t *tx) rollback(ctx context.Context) {
	_, _ = t.conn.Exec(ctx, "ROLLBACK")
}

// SendAtCommit queues b's statements to go with the COMMIT of ctx's
// transaction, in its round trip: for writes that record a change and
// whose results the transaction does not read, such as audit entries and
// events. Their callbacks run at commit, and should one fail the
// transaction rolls back and Tx returns its error. Outside a transaction
// it is SendBatch.
func (db *DB) SendAtCommit(ctx context.Context, b *pgx.Batch) error {
	t, ok := ctx.Value(txKey{}).(*tx)
	if !ok {
		return db.SendBatch(ctx, b)
	}
	t.atCommit = append(t.atCommit, b.QueuedQueries...)
	return nil
}

// SendBatch sends b's statements in one round trip: inside ctx's
// transaction when there is one, otherwise as one implicit transaction
// scoped to ctx's organization, so either every statement takes effect or
// none does. The statements' callbacks (QueuedQuery.Exec, QueryRow, Query)
// run before it returns; the first error is returned, translated as Q's
// are.
func (db *DB) SendBatch(ctx context.Context, b *pgx.Batch) error {
	if t, ok := ctx.Value(txKey{}).(*tx); ok {
		return translate(t.sendBatch(ctx, b))
	}
	org, ok := OrgID(ctx)
	if !ok {
		return ErrNoTenant
	}
	scoped := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(b.QueuedQueries)+2)}
	scoped.Queue(db.scope, db.role, org)
	scoped.QueuedQueries = append(scoped.QueuedQueries, b.QueuedQueries...)
	queueCommitNote(ctx, scoped)
	conn, err := db.acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	return translate(conn.SendBatch(ctx, scoped).Close())
}

// acquire takes a connection of the pool, waiting at most acquireTimeout.
// Failing to get one while ctx is still live is the database being
// unavailable to this request, whichever the cause (a starved pool, a
// server that refuses connections, a closed pool).
func (db *DB) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	waitCtx, cancel := context.WithTimeout(ctx, db.acquireTimeout)
	defer cancel()
	conn, err := db.pool.Acquire(waitCtx)
	if err == nil {
		return conn, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, errs.Unavailable("DATABASE_UNAVAILABLE", "the database cannot take this request right now; retry shortly").WithCause(err)
}

// scopeSQL switches the current transaction to a role and an organization;
// the row-level security policies read the organization through
// app_org_id(). It also sets the statement and lock timeouts, in
// milliseconds: Open fills them in, so each DB's scope is one constant
// statement, prepared once per connection. Every setting is transaction-local
// (is_local true), so it ends with the transaction and never outlives it
// on a connection that a pooler hands to someone else next.
const scopeSQL = "SELECT set_config('role', $1, true), set_config('app.org_id', $2, true), " +
	"set_config('statement_timeout', '%d', true), set_config('lock_timeout', '%d', true)"

// scoped runs single statements for one organization (or none, when org
// is empty). Each statement is sent after scopeSQL as one pipelined batch:
// one implicit transaction, one round trip, no session state left behind.
type scoped struct {
	db  *DB
	org string
}

func (s scoped) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return execRows(s.Query(ctx, sql, args...))
}

func (s scoped) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if InTx(ctx) {
		return nil, ErrBesideTx
	}
	conn, err := s.db.acquire(ctx)
	if err != nil {
		return nil, err
	}
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, 3)}
	b.Queue(s.db.scope, s.db.role, s.org)
	b.Queue(sql, args...)
	if s.org != "" {
		queueCommitNote(ctx, b)
	}
	return batchRows(conn.SendBatch(ctx, b), 1, conn.Release)
}

func (s scoped) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return queryRow(s.Query(ctx, sql, args...))
}

// batchRows returns the rows of the statement of br that follows skip
// others (which return no rows), closing br when they are closed and then
// calling release, if set.
func batchRows(br pgx.BatchResults, skip int, release func()) (pgx.Rows, error) {
	r := &batchedRows{batch: br, release: release}
	var err error
	for range skip {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if err == nil {
		r.Rows, err = br.Query()
	}
	if err != nil {
		r.Rows = nil
		r.Close()
		return nil, err
	}
	return r, nil
}

// execRows is Exec done with Query's rows.
func execRows(rows pgx.Rows, err error) (pgconn.CommandTag, error) {
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	rows.Close()
	return rows.CommandTag(), rows.Err()
}

// queryRow is QueryRow done with Query's rows.
func queryRow(rows pgx.Rows, err error) pgx.Row {
	if err != nil {
		return failedRow{err}
	}
	return rowOf{rows}
}

// batchedRows closes its batch, then calls release, when closed.
type batchedRows struct {
	pgx.Rows
	batch   pgx.BatchResults
	release func()
	closed  bool
	err     error
}

func (r *batchedRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	if r.Rows != nil {
		r.Rows.Close()
		if err := r.Rows.Err(); err != nil && r.err == nil {
			r.err = err
		}
	}
	if err := r.batch.Close(); err != nil && r.err == nil {
		r.err = err
	}
	if r.release != nil {
		r.release()
	}
}

func (r *batchedRows) Err() error {
	if r.Rows != nil {
		if err := r.Rows.Err(); err != nil {
			return err
		}
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

// sweepBatch bounds the rows one statement of SweepBefore deletes, so that
// a sweep of a large backlog holds its locks only briefly each time.
const sweepBatch = 5000

// SweepBefore calls the SECURITY DEFINER sweep function fn(before, limit),
// which deletes up to limit rows older than before and returns how many
// it deleted, until a call comes back short; it returns the total.
func (db *DB) SweepBefore(ctx context.Context, fn string, before time.Time) (int, error) {
	total := 0
	for {
		var n int
		if err := db.Unscoped().QueryRow(ctx, `SELECT `+fn+`($1, $2)`, before, sweepBatch).Scan(&n); err != nil {
			return total, fmt.Errorf("sweep %s: %w", fn, err)
		}
		total += n
		if n < sweepBatch {
			return total, nil
		}
	}
}
