package app

import (
	"context"

	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/observability"
)

// OrgInfoLookup reads the organization facts of assessd_org_info, each
// within its own tenant scope (the application role cannot list tenants).
func OrgInfoLookup(db *store.DB) observability.OrgInfoLookup {
	return func(ctx context.Context, orgID string) (observability.OrgInfo, error) {
		ctx = store.WithOrg(ctx, orgID)
		var info observability.OrgInfo
		err := db.Q(ctx).QueryRow(ctx, `SELECT name, plan, ai_region FROM orgs WHERE id = app_org_id()`).
			Scan(&info.Name, &info.Plan, &info.AIRegion)
		return info, err
	}
}
