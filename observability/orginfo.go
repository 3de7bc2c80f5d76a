package observability

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// OrgInfo is what assessd_org_info tells about an organization.
type OrgInfo struct {
	Name, Plan, AIRegion string
}

// OrgInfoLookup reads one organization's info.
type OrgInfoLookup func(ctx context.Context, orgID string) (OrgInfo, error)

// Refresh bounds of assessd_org_info: an entry is read again once it is
// older than orgInfoMaxAge, and one scrape spends at most
// orgInfoScrapeBudget on lookups (the rest wait for the next scrape).
const (
	orgInfoMaxAge       = 5 * time.Minute
	orgInfoScrapeBudget = 2 * time.Second
)

// orgInfoCollector exports assessd_org_info{org,name,plan,ai_region} = 1
// for every organization with its own org label, so dashboards can join
// per-tenant series on name, plan and AI region.
type orgInfoCollector struct {
	desc   *prometheus.Desc
	orgs   *OrgLabeler
	lookup OrgInfoLookup

	mu    sync.Mutex
	cache map[string]cachedOrgInfo
}

type cachedOrgInfo struct {
	OrgInfo
	read time.Time
}

// RegisterOrgInfo exports assessd_org_info for the organizations this
// process has labelled, read through lookup and cached for a few minutes.
func (m *Metrics) RegisterOrgInfo(lookup OrgInfoLookup) {
	m.Registry.MustRegister(&orgInfoCollector{
		desc: prometheus.NewDesc("assessd_org_info",
			"Organization facts to join per-tenant series on; always 1.",
			[]string{"org", "name", "plan", "ai_region"}, nil),
		orgs:   &m.orgs,
		lookup: lookup,
		cache:  map[string]cachedOrgInfo{},
	})
}

func (c *orgInfoCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *orgInfoCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), orgInfoScrapeBudget)
	defer cancel()
	now := time.Now()
	for _, id := range c.orgs.Seen() {
		info, ok := c.cache[id]
		if (!ok || now.Sub(info.read) > orgInfoMaxAge) && ctx.Err() == nil {
			fresh, err := c.lookup(ctx, id)
			if err == nil {
				info, ok = cachedOrgInfo{OrgInfo: fresh, read: now}, true
				c.cache[id] = info
			} else {
				slog.Warn("reading organization info for metrics", "org", id, "err", err)
			}
		}
		if ok {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, id, info.Name, info.Plan, info.AIRegion)
		}
	}
}
