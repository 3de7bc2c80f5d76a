package app

import (
	"testing"

	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
	webhookworkflow "github.com/assessd/assessd/workflows/webhooks"
)

// TestEveryKindIsRouted: each of outbox.Kinds has its workflow, its
// unfinished check and its abandon wired here, the one place a kind is
// wired (decision 0198), and each check runs against the schema in an
// organization's scope, where a subject it does not find is finished.
func TestEveryKindIsRouted(t *testing.T) {
	db := storetest.New(t)
	org, err := tenancy.NewService(db).CreateOrg(t.Context(), tenancy.NewOrg{Name: "Routes", Country: "US"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := store.WithOrg(t.Context(), org.ID)
	r := routes(db, webhookworkflow.DefaultRetry)
	if len(r) != len(outbox.Kinds()) {
		t.Errorf("%d routes for %d kinds", len(r), len(outbox.Kinds()))
	}
	for _, kind := range outbox.Kinds() {
		route, ok := r[kind]
		if !ok || route.Workflow == nil || route.Input == nil || route.Unfinished == nil || route.Abandon == nil {
			t.Errorf("kind %s: route %+v, want its workflow, input, unfinished check and abandon", kind, route)
			continue
		}
		if open, err := route.Unfinished(ctx, []string{"none_1", "none_2"}); err != nil || len(open) != 0 {
			t.Errorf("kind %s: unknown subjects unfinished %v, %v", kind, open, err)
		}
	}
}
