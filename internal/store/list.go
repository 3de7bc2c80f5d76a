package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/platform/paging"
)

// ListPage runs one page's query on q and returns the page and the token of
// the next one ("" on the last page). sql must return rows in the list's
// order after p.After and at most p.Limit() of them; scan reads one row and
// cursorOf names the item a next page starts after.
func ListPage[T any](ctx context.Context, q Querier, p paging.Page, scan func(pgx.Row) (T, error),
	cursorOf func(T) string, sql string, args ...any) ([]T, string, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, "", err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
	if err != nil {
		return nil, "", err
	}
	items, next := paging.Trim(p, items, cursorOf)
	return items, next, nil
}

// Strings runs sql, a query of one text column, on q and returns its
// values.
func Strings(ctx context.Context, q Querier, sql string, args ...any) ([]string, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
