package webhooks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/assessd/assessd/internal/platform/egress"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/internal/webhooks"
	"github.com/assessd/assessd/internal/webhooks/event"
)

// TestEndpointDeletedMidway deletes an endpoint while an event for it is
// being recorded and while one of its deliveries is on the wire. Neither
// is an error: the event goes to the endpoints that remain, and the
// attempt that outlived its endpoint is simply not recorded.
func TestEndpointDeletedMidway(t *testing.T) {
	f := newFixture(t)
	url, db, owner, ctx, hooks := f.url, f.db, f.owner, f.ctx, f.hooks
	bg := context.Background()
	var deleteOnDelivery string
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if deleteOnDelivery != "" {
			if _, err := owner.Exec(r.Context(), `DELETE FROM webhook_endpoints WHERE id = $1`, deleteOnDelivery); err != nil {
				t.Errorf("delete during delivery: %v", err)
			}
		}
	}))
	t.Cleanup(receiver.Close)
	newEndpoint := func() string {
		e, err := hooks.CreateEndpoint(ctx, webhooks.NewEndpoint{URL: receiver.URL, Events: []string{string(event.UserCreated)}})
		if err != nil {
			t.Fatal(err)
		}
		return e.ID
	}
	recorder := event.NewRecorder(func(r any) (json.RawMessage, error) { return json.Marshal(r) })
	record := func() error {
		return db.Tx(ctx, func(ctx context.Context) error {
			return recorder.Record(ctx, db, event.UserCreated, map[string]string{"id": "usr_x"})
		})
	}
	targets := func() (events, endpoints []string) {
		rows, err := owner.Query(bg, `SELECT event_id, endpoint_id FROM webhook_targets ORDER BY endpoint_id`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var ev, ep string
			if err := rows.Scan(&ev, &ep); err != nil {
				t.Fatal(err)
			}
			events, endpoints = append(events, ev), append(endpoints, ep)
		}
		return events, endpoints
	}

	kept, deleted := newEndpoint(), newEndpoint()
	err := storetest.DeleteDuring(t, url, `DELETE FROM webhook_endpoints WHERE id = $1`, []any{deleted}, record)
	if err != nil {
		t.Fatalf("recording an event while an endpoint is deleted: %v", err)
	}
	events, endpoints := targets()
	if !slices.Equal(endpoints, []string{kept}) {
		t.Fatalf("the event's targets are %v; want only the remaining endpoint %s", endpoints, kept)
	}

	// The receiver's endpoint is deleted while its delivery is on the wire.
	deleteOnDelivery = kept
	deliverer := webhooks.NewDeliverer(db, egress.Targets{AllowPrivate: true}, nil)
	if err := deliverer.Attempt(ctx, events[0], kept, 1); err != nil {
		t.Fatalf("an attempt whose endpoint was deleted meanwhile: %v", err)
	}
	var n int
	if err := owner.QueryRow(bg, `SELECT count(*) FROM webhook_deliveries`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d deliveries recorded (%v); want none for a deleted endpoint", n, err)
	}
}
