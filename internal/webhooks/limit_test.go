package webhooks_test

import (
	"sync"
	"testing"

	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/webhooks"
)

// TestEndpointsAreBounded: an organization holds MaxEndpoints endpoints;
// one more is a 409 ENDPOINT_LIMIT, even when the last places are taken
// concurrently, and deleting one makes room.
func TestEndpointsAreBounded(t *testing.T) {
	f := newFixture(t)
	create := func() (webhooks.Endpoint, error) {
		return f.hooks.CreateEndpoint(f.ctx, webhooks.NewEndpoint{URL: "http://127.0.0.1:9/hook", Events: []string{"user.created"}})
	}
	for range webhooks.MaxEndpoints - 2 {
		if _, err := create(); err != nil {
			t.Fatal(err)
		}
	}
	// Four creators race for the last two places.
	var wg sync.WaitGroup
	results := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			_, err := create()
			results <- err
		})
	}
	wg.Wait()
	close(results)
	created, refused := 0, 0
	for err := range results {
		switch {
		case err == nil:
			created++
		case isLimit(err):
			refused++
		default:
			t.Fatal(err)
		}
	}
	list, _, err := f.hooks.ListEndpoints(f.ctx, paging.Page{Size: paging.MaxSize})
	if err != nil {
		t.Fatal(err)
	}
	if created != 2 || refused != 2 || len(list) != webhooks.MaxEndpoints {
		t.Fatalf("racing for the last 2 places: %d created, %d refused, %d endpoints; want 2, 2 and %d", created, refused, len(list), webhooks.MaxEndpoints)
	}
	if err := f.hooks.DeleteEndpoint(f.ctx, list[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := create(); err != nil {
		t.Fatalf("after a deletion: %v", err)
	}
}

func isLimit(err error) bool {
	e, ok := errs.As(err)
	return ok && e.Kind == errs.KindConflict && e.Reason == "ENDPOINT_LIMIT"
}
