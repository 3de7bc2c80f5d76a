package store_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/testkit/storetest"
)

// TestForeignKeysAreIndexed: deleting a row makes PostgreSQL look up the
// rows referencing it by the referencing columns alone, a scan of the
// whole table unless an index leads with them (migration 023). Tables
// whose rows are never deleted are exempt.
func TestForeignKeysAreIndexed(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, storetest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
		SELECT c.conrelid::regclass::text || ' ' || c.conname
		  FROM pg_constraint c
		 WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace
		   AND c.confrelid::regclass::text <> ALL ($1)
		   AND NOT EXISTS (
		       SELECT FROM pg_index i
		        WHERE i.indrelid = c.conrelid
		          AND (i.indkey::int2[])[0:cardinality(c.conkey) - 1] @> c.conkey
		          AND (i.indkey::int2[])[0:cardinality(c.conkey) - 1] <@ c.conkey)
		 ORDER BY 1`, []string{"orgs", "question_types", "service_accounts"})
	if err != nil {
		t.Fatal(err)
	}
	unindexed, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, fk := range unindexed {
		t.Errorf("foreign key %s: no index leads with its columns", fk)
	}
}
