package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/assessd/assessd/internal/platform/errs"
)

// The store-level errors a domain package may test for with errors.Is. The
// store translates PostgreSQL's errors into them once, by SQLSTATE, so no
// domain package inspects driver errors or their message text.
var (
	// ErrUniqueViolation is a unique constraint or index refusing a row (23505).
	ErrUniqueViolation = errors.New("store: unique violation")
	// ErrForeignKeyViolation is a foreign key refusing a row (23503).
	ErrForeignKeyViolation = errors.New("store: foreign key violation")
	// ErrCheckViolation is a check constraint refusing a row (23514).
	ErrCheckViolation = errors.New("store: check violation")
	// ErrNotNullViolation is a NOT NULL column refusing a null (23502).
	ErrNotNullViolation = errors.New("store: not-null violation")
	// ErrPermissionDenied is a privilege or row-level security policy
	// refusing a statement (42501).
	ErrPermissionDenied = errors.New("store: permission denied")
)

// sentinels maps SQLSTATE codes to the store's errors.
var sentinels = map[string]error{
	"23505": ErrUniqueViolation,
	"23503": ErrForeignKeyViolation,
	"23514": ErrCheckViolation,
	"23502": ErrNotNullViolation,
	"42501": ErrPermissionDenied,
}

// ConstraintError is a PostgreSQL error the store recognised. errors.Is
// matches its sentinel (ErrUniqueViolation, ...); errors.As still reaches
// the driver's *pgconn.PgError for logs.
type ConstraintError struct {
	// Sentinel is one of the store's Err* values.
	Sentinel error
	// Constraint names the constraint or index, when PostgreSQL reports one.
	Constraint string
	pg         *pgconn.PgError
}

func (e *ConstraintError) Error() string { return e.pg.Error() }

// Unwrap returns the driver's error.
func (e *ConstraintError) Unwrap() error { return e.pg }

// Is reports whether target is e's sentinel.
func (e *ConstraintError) Is(target error) bool { return target == e.Sentinel }

// Unhandled is the domain error of a request whose code did not expect e
// (decision 0177). A request answers as its site decided where one did
// (400 naming the field, 404 for the path's resource); elsewhere a foreign
// key met mid-write means a row was deleted meanwhile, and a unique index
// an equal row written meanwhile: the client is told the state changed,
// not that the server broke. A check or not-null column refusing a value
// is input that validation let through. A row-level security refusal is
// nil: it is a fault of the code, which stays a 500.
func (e *ConstraintError) Unhandled() *errs.Error {
	var d *errs.Error
	switch e.Sentinel {
	case ErrForeignKeyViolation:
		d = errs.Conflict("REFERENCE_GONE", "a resource this request refers to was deleted meanwhile")
	case ErrUniqueViolation:
		d = errs.Conflict("ALREADY_EXISTS", "an equal resource was created meanwhile")
	case ErrCheckViolation, ErrNotNullViolation:
		// Not INVALID_ARGUMENT: that reason promises the field at fault,
		// which only the site could name.
		d = &errs.Error{Kind: errs.KindInvalid, Reason: "VALUE_NOT_STORABLE", Message: "the request holds a value that cannot be stored"}
	default:
		return nil
	}
	return d.WithCause(e)
}

// ForeignKey returns the constraint of the foreign key err reports
// violated, or "" when err reports none. A write that checked the row it
// refers to and then violated its foreign key lost a race with that row's
// deletion: the caller says that the row is gone, as a later request
// would be told.
func ForeignKey(err error) string {
	var ce *ConstraintError
	if errors.As(err, &ce) && ce.Sentinel == ErrForeignKeyViolation {
		return ce.Constraint
	}
	return ""
}

// deadlockAttempts bounds RetryDeadlock: a transaction PostgreSQL keeps
// choosing as a deadlock's victim has a lock order to fix, not a race.
const deadlockAttempts = 3

// RetryDeadlock runs tx, a whole transaction whose only effects are in the
// database, again when PostgreSQL aborted it to break a deadlock
// (SQLSTATE 40P01), at most deadlockAttempts times in all.
func RetryDeadlock(tx func() error) error {
	var err error
	for range deadlockAttempts {
		var pg *pgconn.PgError
		if err = tx(); !errors.As(err, &pg) || pg.Code != "40P01" {
			return err
		}
	}
	return err
}

// translate turns a recognised PostgreSQL error into a *ConstraintError, a
// statement or lock timeout into DATABASE_UNAVAILABLE, a deadlock or
// serialization failure into CONCURRENT_UPDATE, and returns every other
// error unchanged.
func translate(err error) error {
	var pg *pgconn.PgError
	if err == nil || !errors.As(err, &pg) {
		return err
	}
	var ce *ConstraintError
	if errors.As(err, &ce) || errs.Is(err, errs.KindUnavailable) {
		return err
	}
	// 57014: the statement timeout (a canceled context surfaces as the
	// context's error, not as this); 55P03: the lock timeout.
	if pg.Code == "57014" || pg.Code == "55P03" {
		return errs.Unavailable("DATABASE_UNAVAILABLE", "the database did not answer in time; retry shortly").WithCause(err)
	}
	// 40P01: a deadlock's victim; 40001: a serialization failure. Both
	// are another request's write at the same moment, and succeed when
	// retried; RetryDeadlock still finds the driver's error in the chain.
	if pg.Code == "40P01" || pg.Code == "40001" {
		return errs.Conflict("CONCURRENT_UPDATE", "another request changed the same data at the same moment; retry").WithCause(err)
	}
	s, ok := sentinels[pg.Code]
	if !ok {
		return err
	}
	return &ConstraintError{Sentinel: s, Constraint: pg.ConstraintName, pg: pg}
}

// translating is the Querier every caller gets: it translates the errors of
// the querier it wraps.
type translating struct{ q Querier }

func (t translating) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := t.q.Exec(ctx, sql, args...)
	return tag, translate(err)
}

func (t translating) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := t.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, translate(err)
	}
	return translatedRows{rows}, nil
}

func (t translating) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return translatedRow{t.q.QueryRow(ctx, sql, args...)}
}

type translatedRows struct{ pgx.Rows }

func (r translatedRows) Err() error { return translate(r.Rows.Err()) }

type translatedRow struct{ row pgx.Row }

func (r translatedRow) Scan(dest ...any) error { return translate(r.row.Scan(dest...)) }
