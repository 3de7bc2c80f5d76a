package webhooks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/platform/egress"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/webhooks"
	"github.com/assessd/assessd/internal/webhooks/event"
)

// TestOldEventsAreSwept: events older than the retention go with their
// deliveries, but one still being delivered stays, and so do recent ones.
func TestOldEventsAreSwept(t *testing.T) {
	f := newFixture(t)
	db, owner, ctx, hooks := f.db, f.owner, f.ctx, f.hooks
	bg := context.Background()
	receiver := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(receiver.Close)
	endpoint, err := hooks.CreateEndpoint(ctx, webhooks.NewEndpoint{URL: receiver.URL, Events: []string{string(event.UserCreated)}})
	if err != nil {
		t.Fatal(err)
	}
	recorder := event.NewRecorder(func(r any) (json.RawMessage, error) { return json.Marshal(r) })
	deliverer := webhooks.NewDeliverer(db, egress.Targets{AllowPrivate: true}, nil)
	var old, pending, recent string
	for _, id := range []*string{&old, &pending, &recent} {
		if err := db.Tx(ctx, func(ctx context.Context) error {
			return recorder.Record(ctx, db, event.UserCreated, map[string]string{"id": "usr_x"})
		}); err != nil {
			t.Fatal(err)
		}
		if err := owner.QueryRow(bg, `SELECT max(id) FROM webhook_events`).Scan(id); err != nil {
			t.Fatal(err)
		}
		if id != &pending {
			if err := deliverer.Attempt(ctx, *id, endpoint.ID, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := owner.Exec(bg, `UPDATE webhook_events SET created_at = $2 WHERE id = ANY ($1)`,
		[]string{old, pending}, time.Now().Add(-webhooks.Retention-time.Hour)); err != nil {
		t.Fatal(err)
	}

	if err := hooks.SweepEvents(bg, time.Now()); err != nil {
		t.Fatal(err)
	}
	rows, err := owner.Query(bg, `SELECT id FROM webhook_events ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{pending, recent}; !slices.Equal(left, want) {
		t.Fatalf("after the sweep the events are %v; want the pending and the recent one %v (old %s)", left, want, old)
	}
	deliveries, _, err := hooks.Deliveries(ctx, endpoint.ID, paging.Page{Size: paging.DefaultSize})
	if err != nil {
		t.Fatal(err)
	}
	if len(deliveries) != 1 || deliveries[0].EventID != recent {
		t.Fatalf("deliveries after the sweep: %+v; want only the recent event's", deliveries)
	}
}
