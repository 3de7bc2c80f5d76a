package assessment_test

import (
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/webhooks/event"
)

// TestGradedEventsOnlyForSubscribers checks that a result finished at
// submission or by grading records its webhook event when an endpoint
// receives that type, and that without one the payload is not even encoded.
func TestGradedEventsOnlyForSubscribers(t *testing.T) {
	f := newFixture(t)
	var encoded atomic.Int32
	f.content.Events = event.NewRecorder(func(resource any) (json.RawMessage, error) {
		encoded.Add(1)
		return json.Marshal(resource)
	})
	ctx := f.staff
	q := f.db.Q(ctx)
	finishEssay := func() {
		t.Helper()
		r := f.submit(t, true)
		if err := f.content.RecordGrade(ctx, r.ID, f.qs[3].ID, 1, "ok", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := f.content.FinishResult(ctx, r.ID, nil); err != nil {
			t.Fatal(err)
		}
	}
	events := func() (n int) {
		t.Helper()
		if err := q.QueryRow(ctx, `SELECT count(*) FROM webhook_events WHERE type = 'result.graded'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	addEndpoint := func(id string, types ...string) {
		t.Helper()
		if _, err := q.Exec(ctx, `INSERT INTO webhook_endpoints (id, org_id, url, events, secret)
			VALUES ($1, app_org_id(), 'https://hooks.example.test/', $2, '\x00')`, id, types); err != nil {
			t.Fatal(err)
		}
	}

	f.submit(t, false)
	finishEssay()
	addEndpoint("whe_users", "user.created")
	f.submit(t, false)
	finishEssay()
	if n, e := encoded.Load(), events(); n != 0 || e != 0 {
		t.Fatalf("without a result.graded endpoint: %d payloads encoded, %d events recorded", n, e)
	}

	addEndpoint("whe_results", "result.graded", "result.failed")
	if r := f.submit(t, false); r.Status != assessment.StatusGraded {
		t.Fatalf("rules-scored result is %s", r.Status)
	}
	finishEssay()
	if n, e := encoded.Load(), events(); n != 2 || e != 2 {
		t.Fatalf("with a result.graded endpoint: %d payloads encoded, %d events recorded; want 2 and 2", n, e)
	}
}
