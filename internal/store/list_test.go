package store_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
)

func TestListPageWalksPages(t *testing.T) {
	db := storetest.New(t)
	seed(t, db, "org_a")
	ctx := store.WithOrg(context.Background(), "org_a")
	scan := func(r pgx.Row) (string, error) {
		var id string
		return id, r.Scan(&id)
	}
	var got []string
	pages := 0
	p := paging.Page{Size: 1}
	for range 3 {
		page, next, err := store.ListPage(ctx, db.Q(ctx), p, scan, func(id string) string { return id },
			`SELECT id FROM users WHERE id > $1 ORDER BY id LIMIT $2`, p.After, p.Limit())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page...)
		pages++
		if next == "" {
			break
		}
		if p, err = paging.Parse(1, next); err != nil {
			t.Fatalf("next token %q: %v", next, err)
		}
	}
	if pages != 2 || len(got) != 2 || got[0] != "org_a-a" || got[1] != "org_a-b" {
		t.Fatalf("%d pages returned %v, want org_a-a then org_a-b and no further page", pages, got)
	}
}
