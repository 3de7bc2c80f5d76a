package app

import (
	"context"

	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/tenancy"
)

// OrgInfoLookup reads the organization facts of assessd_org_info, each
// within its own tenant scope (the application role cannot list tenants).
func OrgInfoLookup(db *store.DB) observability.OrgInfoLookup {
	return func(ctx context.Context, orgID string) (observability.OrgInfo, error) {
		ctx = store.WithOrg(ctx, orgID)
		org, err := tenancy.CurrentOrg(ctx, db.Q(ctx))
		return observability.OrgInfo{Name: org.Name, Plan: org.Plan, AIRegion: org.AIRegion}, err
	}
}
