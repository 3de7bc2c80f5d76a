package observability_test

import (
	"context"
	"errors"
	"testing"

	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/observability/promreg/promregtest"
)

// assessd_org_info lists the labelled organizations with their facts,
// read once and then cached; an organization that cannot be read is left
// out rather than failing the scrape.
func TestOrgInfo(t *testing.T) {
	m := observability.NewMetrics()
	lookups := 0
	m.RegisterOrgInfo(func(_ context.Context, id string) (observability.OrgInfo, error) {
		lookups++
		if id == "org_gone" {
			return observability.OrgInfo{}, errors.New("no such organization")
		}
		return observability.OrgInfo{Name: "School " + id, Plan: "pro", AIRegion: "eu"}, nil
	})
	m.Org("org_a")
	m.Org("org_gone")
	for range 2 {
		series := promregtest.Find(t, m.Registry, "assessd_org_info",
			map[string]string{"org": "org_a", "name": "School org_a", "plan": "pro", "ai_region": "eu"})
		if v := series.GetGauge().GetValue(); v != 1 {
			t.Fatalf("assessd_org_info = %v, want 1", v)
		}
	}
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "assessd_org_info" && len(f.GetMetric()) != 1 {
			t.Errorf("%d assessd_org_info series, want only org_a's", len(f.GetMetric()))
		}
	}
	if lookups != 4 { // org_a once (cached), org_gone on each of 3 scrapes
		t.Errorf("%d lookups, want 4", lookups)
	}
}
