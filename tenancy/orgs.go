package tenancy

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/language"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/store"
)

// AI regions of settings.aiRegion.
const (
	RegionGlobal = "global"
	RegionEU     = "eu"
)

// Plans. Region selection is a paid feature: see PlanAllowsRegionChoice.
const (
	PlanFree       = "free"
	PlanPro        = "pro"
	PlanEnterprise = "enterprise"
)

// Audit actions of an organization's settings, plan and quota.
const (
	ActionAIRegionChanged = "org.ai_region_changed"
	ActionPlanChanged     = "org.plan_changed"
	ActionQuotaChanged    = "org.quota_changed"
)

// MaxRequestsPerMinute bounds an operator's quota override (decision
// 0186): about 16,700 requests a second, more than a load test of one
// deployment sends, yet low enough that a typo of a few digits is refused
// rather than leaving an organization unlimited.
const MaxRequestsPerMinute = 1_000_000

// PlanAllowsRegionChoice reports whether organizations on plan may change
// settings.aiRegion.
func PlanAllowsRegionChoice(plan string) bool { return plan == PlanPro || plan == PlanEnterprise }

// RequestsPerMinute is the API request quota of an organization on plan
// (decision 0050); an unknown plan gets the free plan's.
func RequestsPerMinute(plan string) int {
	switch plan {
	case PlanEnterprise:
		return 6000
	case PlanPro:
		return 1200
	}
	return 300
}

// StudentRequestsPerMinute is the request quota of each student's own
// credentials, counted apart from the organization's (decision 0192): an
// exam saves every 10 s or so, 6 a minute, which leaves room for reads,
// retries and a slow network many times over.
const StudentRequestsPerMinute = 120

// Org is an organization (workspace).
type Org struct {
	ID       string
	Name     string
	Country  string
	Plan     string
	AIRegion string
	// QuotaOverride is the operator's request quota a minute in place of
	// the plan's; nil leaves the plan's (decision 0186).
	QuotaOverride *int
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Quota is o's request quota a minute: its override, or perPlan's quota of
// its plan; override says which.
func (o Org) Quota(perPlan func(plan string) int) (perMinute int, override bool) {
	if o.QuotaOverride != nil {
		return *o.QuotaOverride, true
	}
	return perPlan(o.Plan), false
}

// NewOrg is the input of CreateOrg.
type NewOrg struct {
	Name    string
	Country string
	Plan    string
}

// PlanPatch is an operator's change of an organization's plan and request
// quota; nil fields stay as they are.
type PlanPatch struct {
	Plan *string
	// RequestsPerMinute overrides the plan's quota, from 1 to
	// MaxRequestsPerMinute; 0 removes the override, so the plan's applies.
	RequestsPerMinute *int
}

// OrgPatch changes the fields that are set.
type OrgPatch struct {
	Name     *string
	AIRegion *string
}

const orgColumns = `id, name, country, plan, ai_region, requests_per_minute, created_at, updated_at`

// AIRegionSQL is a scalar SQL expression for the AI region of the
// organization a statement is scoped to. Packages that record the region
// with a row they insert embed it in that INSERT, so the region is read in
// the same statement and transaction, without a round trip of its own.
const AIRegionSQL = `(SELECT ai_region FROM orgs WHERE id = app_org_id())`

func scanOrg(row interface{ Scan(...any) error }) (Org, error) {
	var o Org
	err := row.Scan(&o.ID, &o.Name, &o.Country, &o.Plan, &o.AIRegion, &o.QuotaOverride, &o.CreatedAt, &o.UpdatedAt)
	return o, err
}

func validateName(field, name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", errs.Invalid(field, "is required")
	}
	if utf8.RuneCountInString(name) > 200 {
		return "", errs.Invalid(field, "must be at most 200 characters")
	}
	return name, nil
}

func validatePlan(plan string) error {
	if plan != PlanFree && plan != PlanPro && plan != PlanEnterprise {
		return errs.Invalid("plan", "must be free, pro or enterprise")
	}
	return nil
}

// CreateOrg creates an organization; its aiRegion defaults from its
// country. It is an operator action (the admin command line).
func (s *Service) CreateOrg(ctx context.Context, in NewOrg) (Org, error) {
	name, err := validateName("name", in.Name)
	if err != nil {
		return Org{}, err
	}
	country := strings.ToUpper(strings.TrimSpace(in.Country))
	if region, err := language.ParseRegion(country); err != nil || !region.IsCountry() || region.String() != country {
		return Org{}, errs.Invalid("country", "must be an ISO 3166-1 alpha-2 country code")
	}
	plan := in.Plan
	if plan == "" {
		plan = PlanFree
	}
	if err := validatePlan(plan); err != nil {
		return Org{}, err
	}
	id := ids.New(ids.Org)
	ctx = WithCaller(ctx, SystemCaller(id))
	var org Org
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		org, err = scanOrg(q.QueryRow(ctx, `
			INSERT INTO orgs (id, name, country, plan, ai_region) VALUES ($1, $2, $3, $4, $5)
			RETURNING `+orgColumns, id, name, country, plan, DefaultAIRegion(country)))
		if err != nil {
			return fmt.Errorf("create org: %w", err)
		}
		err = audit.Record(ctx, s.db, audit.Entry{
			Action: "org.created", Actor: ActorOf(SystemCaller(id)), Target: audit.Target{Type: "org", ID: id},
			After: orgSnapshot(org),
		})
		return err
	})
	return org, err
}

// Org returns the caller's organization.
func (s *Service) Org(ctx context.Context) (Org, error) {
	if _, err := Authorize(ctx, ReadOrg); err != nil {
		return Org{}, err
	}
	return loadOrg(ctx, s.db.Q(ctx), false)
}

// CurrentOrg returns the organization q is scoped to. It is for the
// packages that report on an organization without a caller (the
// assessd_org_info metric) and checks no permission of its own.
func CurrentOrg(ctx context.Context, q store.Querier) (Org, error) {
	return loadOrg(ctx, q, false)
}

func loadOrg(ctx context.Context, q store.Querier, forUpdate bool) (Org, error) {
	sql := `SELECT ` + orgColumns + ` FROM orgs WHERE id = app_org_id()`
	if forUpdate {
		sql += ` FOR UPDATE`
	}
	org, err := scanOrg(q.QueryRow(ctx, sql))
	if isNoRows(err) {
		return Org{}, errs.NotFound("org")
	}
	if err != nil {
		return Org{}, fmt.Errorf("load org: %w", err)
	}
	return org, nil
}

// UpdateOrg applies p to the caller's organization. A change of aiRegion
// needs a plan with region choice and is audited as org.ai_region_changed
// in the same transaction, so the change and its entry exist together or
// not at all.
func (s *Service) UpdateOrg(ctx context.Context, p OrgPatch) (Org, error) {
	caller, err := Authorize(ctx, WriteOrg)
	if err != nil {
		return Org{}, err
	}
	if p.Name != nil {
		name, err := validateName("name", *p.Name)
		if err != nil {
			return Org{}, err
		}
		p.Name = &name
	}
	if p.AIRegion != nil && *p.AIRegion != RegionGlobal && *p.AIRegion != RegionEU {
		return Org{}, errs.Invalid("settings.aiRegion", "must be global or eu")
	}
	var org Org
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		before, err := loadOrg(ctx, q, true)
		if err != nil {
			return err
		}
		org = before
		if p.Name != nil {
			org.Name = *p.Name
		}
		regionChanged := p.AIRegion != nil && *p.AIRegion != before.AIRegion
		if regionChanged {
			if !PlanAllowsRegionChoice(before.Plan) {
				return errs.Forbidden("PLAN_FEATURE_UNAVAILABLE", "the %s plan does not include choosing the AI region", before.Plan)
			}
			org.AIRegion = *p.AIRegion
		}
		if org.Name == before.Name && !regionChanged {
			return nil
		}
		org, err = scanOrg(q.QueryRow(ctx, `
			UPDATE orgs SET name = $1, ai_region = $2, updated_at = now()
			 WHERE id = app_org_id() RETURNING `+orgColumns, org.Name, org.AIRegion))
		if err != nil {
			return fmt.Errorf("update org: %w", err)
		}
		if regionChanged {
			if err := audit.Record(ctx, s.db, audit.Entry{
				Action: ActionAIRegionChanged, Actor: ActorOf(caller), Target: audit.Target{Type: "org", ID: org.ID},
				Before: map[string]any{"settings": map[string]any{"aiRegion": before.AIRegion}},
				After:  map[string]any{"settings": map[string]any{"aiRegion": org.AIRegion}},
			}); err != nil {
				return err
			}
		}
		if org.Name != before.Name {
			if err := audit.Record(ctx, s.db, audit.Entry{
				Action: "org.updated", Actor: ActorOf(caller), Target: audit.Target{Type: "org", ID: org.ID},
				Before: map[string]any{"name": before.Name}, After: map[string]any{"name": org.Name},
			}); err != nil {
				return err
			}
		}
		return nil
	})
	return org, err
}

// SetPlan applies an operator's change of plan or request quota to the
// organization in ctx (the admin command line; no API caller holds
// OperateOrg). Each change is audited in the same transaction:
// org.plan_changed with the plans, org.quota_changed with the effective
// quota and its source. A plan change keeps an override: the operator
// lifted that organization's quota on purpose. Instances read the new
// quota when their cached policy of the organization expires, within a
// minute (decisions 0119, 0186).
func (s *Service) SetPlan(ctx context.Context, p PlanPatch) (Org, error) {
	caller, err := Authorize(ctx, OperateOrg)
	if err != nil {
		return Org{}, err
	}
	if p.Plan != nil {
		if err := validatePlan(*p.Plan); err != nil {
			return Org{}, err
		}
	}
	if p.RequestsPerMinute != nil && (*p.RequestsPerMinute < 0 || *p.RequestsPerMinute > MaxRequestsPerMinute) {
		return Org{}, errs.Invalid("requestsPerMinute", "must be from 1 to %d, or 0 for the plan's quota", MaxRequestsPerMinute)
	}
	var org Org
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		before, err := loadOrg(ctx, q, true)
		if err != nil {
			return err
		}
		org = before
		if p.Plan != nil {
			org.Plan = *p.Plan
		}
		if p.RequestsPerMinute != nil {
			org.QuotaOverride = nil
			if *p.RequestsPerMinute > 0 {
				org.QuotaOverride = p.RequestsPerMinute
			}
		}
		planChanged, quotaChanged := org.Plan != before.Plan, !equalOverride(org.QuotaOverride, before.QuotaOverride)
		if !planChanged && !quotaChanged {
			return nil
		}
		org, err = scanOrg(q.QueryRow(ctx, `
			UPDATE orgs SET plan = $1, requests_per_minute = $2, updated_at = now()
			 WHERE id = app_org_id() RETURNING `+orgColumns, org.Plan, org.QuotaOverride))
		if err != nil {
			return fmt.Errorf("set plan: %w", err)
		}
		target := audit.Target{Type: "org", ID: org.ID}
		if planChanged {
			if err := audit.Record(ctx, s.db, audit.Entry{Action: ActionPlanChanged, Actor: ActorOf(caller), Target: target,
				Before: map[string]any{"plan": before.Plan}, After: map[string]any{"plan": org.Plan}}); err != nil {
				return err
			}
		}
		if quotaChanged {
			return audit.Record(ctx, s.db, audit.Entry{Action: ActionQuotaChanged, Actor: ActorOf(caller), Target: target,
				Before: quotaSnapshot(before), After: quotaSnapshot(org)})
		}
		return nil
	})
	return org, err
}

func equalOverride(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// QuotaSource names where an organization's request quota comes from:
// "override" or "plan".
func QuotaSource(override bool) string {
	if override {
		return "override"
	}
	return "plan"
}

// quotaSnapshot is an audit entry's view of o's request quota.
func quotaSnapshot(o Org) map[string]any {
	perMinute, override := o.Quota(RequestsPerMinute)
	return map[string]any{"plan": o.Plan, "requestsPerMinute": perMinute, "source": QuotaSource(override)}
}

func orgSnapshot(o Org) map[string]any {
	return map[string]any{
		"name": o.Name, "country": o.Country, "plan": o.Plan,
		"settings": map[string]any{"aiRegion": o.AIRegion},
	}
}
