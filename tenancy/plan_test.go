package tenancy_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// TestSetPlanOverridesTheQuota: the operator's override is kept with the
// organization, survives a plan change, and 0 gives the plan's quota back;
// each change is audited with its before and after, and nothing else
// (a repeated value, a bad one, an API caller) writes anything.
func TestSetPlanOverridesTheQuota(t *testing.T) {
	db := storetest.New(t)
	s := tenancy.NewService(db)
	org, err := s.CreateOrg(context.Background(), tenancy.NewOrg{Name: "District", Country: "US"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(org.ID))
	quota := func(want int, wantOverride bool) {
		t.Helper()
		got, err := s.Org(ctx) // read back from the database
		if err != nil {
			t.Fatal(err)
		}
		if n, override := got.Quota(tenancy.RequestsPerMinute); n != want || override != wantOverride {
			t.Fatalf("quota = %d (override %v), want %d (override %v)", n, override, want, wantOverride)
		}
	}
	quota(300, false)

	set := func(p tenancy.PlanPatch) {
		t.Helper()
		if _, err := s.SetPlan(ctx, p); err != nil {
			t.Fatalf("SetPlan(%+v): %v", p, err)
		}
	}
	set(tenancy.PlanPatch{RequestsPerMinute: ptr(50_000)})
	quota(50_000, true)
	set(tenancy.PlanPatch{Plan: ptr(tenancy.PlanPro)})
	quota(50_000, true)
	set(tenancy.PlanPatch{RequestsPerMinute: ptr(50_000), Plan: ptr(tenancy.PlanPro)}) // no change, no entry
	set(tenancy.PlanPatch{RequestsPerMinute: ptr(0)})
	quota(1200, false)

	for _, tc := range []struct {
		name  string
		patch tenancy.PlanPatch
		field string
	}{
		{"negative quota", tenancy.PlanPatch{RequestsPerMinute: ptr(-1)}, "requestsPerMinute"},
		{"quota past the maximum", tenancy.PlanPatch{RequestsPerMinute: ptr(tenancy.MaxRequestsPerMinute + 1)}, "requestsPerMinute"},
		{"unknown plan", tenancy.PlanPatch{Plan: ptr("gold")}, "plan"},
	} {
		_, err := s.SetPlan(ctx, tc.patch)
		if e, ok := errs.As(err); !ok || e.Kind != errs.KindInvalid || e.Field != tc.field {
			t.Errorf("%s: err = %v, want invalid %s", tc.name, err, tc.field)
		}
	}
	owner := tenancy.WithCaller(context.Background(), &tenancy.Caller{Kind: tenancy.KindAPIKey, OrgID: org.ID, UserID: "usr_x",
		Role: tenancy.RoleOwner, Scopes: tenancy.AllScopes})
	if _, err := s.SetPlan(owner, tenancy.PlanPatch{RequestsPerMinute: ptr(10)}); reasonOf(err) != "CALLER_KIND_NOT_ALLOWED" {
		t.Fatalf("an owner's API key setting the quota: err = %v", err)
	}
	quota(1200, false)
	if _, err := s.SetPlan(tenancy.WithCaller(context.Background(), tenancy.SystemCaller("org_01ARZ3NDEKTSV4RRFFQ69G5FAV")),
		tenancy.PlanPatch{RequestsPerMinute: ptr(10)}); !errs.Is(err, errs.KindNotFound) {
		t.Fatalf("unknown organization: err = %v, want not found", err)
	}

	entries, _, err := s.AuditLogs(ctx, audit.Filter{TargetType: "org"}, paging.Page{Size: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := len(entries) - 1; i >= 0; i-- { // oldest first
		e := entries[i]
		if e.Action == "org.created" {
			continue
		}
		if e.Actor.Kind != audit.ActorSystem || e.Actor.ID != "cli" {
			t.Errorf("%s: actor %+v, want the system's cli", e.Action, e.Actor)
		}
		got = append(got, e.Action+" "+describe(e.Before)+" -> "+describe(e.After))
	}
	want := []string{
		"org.quota_changed free 300 plan -> free 50000 override",
		"org.plan_changed free -> pro",
		"org.quota_changed pro 50000 override -> pro 1200 plan",
	}
	if len(got) != len(want) {
		t.Fatalf("audit entries:\n%v\nwant\n%v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %q, want %q", i, got[i], want[i])
		}
	}
}

// describe is an audit snapshot of a plan or a quota as one line.
func describe(m map[string]any) string {
	s := m["plan"].(string)
	if n, ok := m["requestsPerMinute"]; ok {
		s += fmt.Sprint(" ", n, " ", m["source"])
	}
	return s
}

func reasonOf(err error) string {
	if e, ok := errs.As(err); ok {
		return e.Reason
	}
	return ""
}

func ptr[T any](v T) *T { return &v }
