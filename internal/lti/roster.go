package lti

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/classes"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// Names and Role Provisioning Services 2.0 (decision 0204): a context's
// launches give the URL of its memberships; POST /classes/{id}/sync, and
// an instructor's launch once the roster is older than rosterInterval,
// read them into the context's class.

// The bounds of a roster read: the pages followed, the members taken, and
// the bytes of one page.
const (
	rosterInterval = 10 * time.Minute
	maxRosterPages = 100
	maxRosterBytes = 4 << 20
	membershipType = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
	// syncTimeout bounds the sync an instructor's launch starts.
	syncTimeout = 2 * time.Minute
)

// RosterSync is what a sync did to a class: the platform's active members
// it read, those it added to the roster (or whose role it changed), those
// it removed (members launched from the platform it no longer lists as
// active), and those it skipped (no learner or instructor role, or staff
// listed as learners).
type RosterSync struct {
	ClassID                          string
	Members, Added, Removed, Skipped int
}

// rememberRoster records where the roster of l's context is read, when
// the platform offers it, and reads it in the background when it is
// older than rosterInterval: an instructor's launch keeps the class's
// roster current.
func (s *Service) rememberRoster(ctx context.Context, l Launch) error {
	if l.NRPS == nil || l.NRPS.ContextMembershipsURL == "" || l.ClassID == "" || l.Context == nil {
		return nil
	}
	if err := s.checkServiceURL(l.NRPS.ContextMembershipsURL); err != nil {
		slog.WarnContext(ctx, "LTI launch with an unusable memberships URL", "platform", l.Platform.ID, "err", err)
		return nil
	}
	var due bool
	err := s.db.Q(ctx).QueryRow(ctx, `
		UPDATE lti_contexts SET platform_id = $4, memberships_url = $5,
		       synced_at = CASE WHEN synced_at IS NULL OR synced_at < now() - make_interval(secs => $6) THEN now() ELSE synced_at END
		 WHERE org_id = app_org_id() AND issuer = $1 AND deployment_id = $2 AND context_id = $3
		RETURNING synced_at = now()`,
		l.Platform.Issuer, l.DeploymentID, l.Context.ID, l.Platform.ID, l.NRPS.ContextMembershipsURL, rosterInterval.Seconds()).Scan(&due)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("lti: remember the context's roster: %w", err)
	}
	if due {
		// The launch's page does not wait for the platform's roster.
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), syncTimeout)
		go func() {
			defer cancel()
			if _, err := s.syncRoster(bg, l.ClassID, audit.Actor{Kind: audit.ActorUser, ID: l.UserID}); err != nil {
				slog.WarnContext(bg, "LTI roster sync on an instructor's launch", "class", l.ClassID, "err", err)
			}
		}()
	}
	return nil
}

// checkServiceURL checks a service URL a launch gives: absolute http(s),
// without credentials, at most egress's length. Where it connects is the
// egress rules' to check when it is fetched.
func (s *Service) checkServiceURL(raw string) error {
	_, err := scoresURL(raw)
	return err
}

// SyncClass reads the memberships of the course context of class classID
// into the class: staff who may change the class, for a class made by LTI
// launches whose platform offers its roster. Audited as lti.roster_synced.
func (s *Service) SyncClass(ctx context.Context, classID string) (RosterSync, error) {
	caller, err := tenancy.Authorize(ctx, classes.WriteClasses)
	if err != nil {
		return RosterSync{}, err
	}
	if _, err := s.classes.Get(ctx, classID); err != nil {
		return RosterSync{}, err
	}
	return s.syncRoster(ctx, classID, tenancy.ActorOf(caller))
}

// rosterContext is where a class's roster comes from.
type rosterContext struct {
	platformID, issuer, deploymentID, contextID, url string
}

// member is one membership of a context (NRPS 2.0, 2.3).
type member struct {
	UserID     string   `json:"user_id"`
	Roles      []string `json:"roles"`
	Status     string   `json:"status"`
	Name       string   `json:"name"`
	GivenName  string   `json:"given_name"`
	FamilyName string   `json:"family_name"`
	Email      string   `json:"email"`
}

// syncRoster is SyncClass, its changes made by the class's platform and
// its audit entry by actor.
func (s *Service) syncRoster(ctx context.Context, classID string, actor audit.Actor) (RosterSync, error) {
	sync := RosterSync{ClassID: classID}
	org, _ := store.OrgID(ctx)
	if c, ok := tenancy.CallerFrom(ctx); ok {
		org = c.OrgID
	}
	var rc rosterContext
	err := s.db.Q(ctx).QueryRow(ctx, `
		SELECT coalesce(platform_id, ''), issuer, deployment_id, context_id, memberships_url FROM lti_contexts
		 WHERE org_id = app_org_id() AND class_id = $1 ORDER BY created_at LIMIT 1`, classID).
		Scan(&rc.platformID, &rc.issuer, &rc.deploymentID, &rc.contextID, &rc.url)
	if errors.Is(err, pgx.ErrNoRows) || !ids.Valid(ids.Class, classID) {
		return sync, errs.FailedPrecondition("CLASS_NOT_FROM_LTI", "This class was not made by an LTI launch: it has no course roster to read.")
	}
	if err != nil {
		return sync, fmt.Errorf("lti: read the class's context: %w", err)
	}
	if rc.platformID == "" || rc.url == "" {
		return sync, errs.FailedPrecondition("ROSTER_UNAVAILABLE",
			"The course's platform has not offered its roster (Names and Role Provisioning Services) in a launch yet: enable the service for the tool and launch the course once.")
	}
	ctx = tenancy.WithCaller(ctx, PlatformCaller(org, rc.platformID, provisioning...))
	p, err := s.loadPlatform(ctx, s.db.Q(ctx), rc.platformID, store.NoLock)
	if err != nil {
		return sync, err
	}
	members, err := s.readMemberships(ctx, p, rc.url)
	if err != nil {
		return sync, err
	}
	active := map[string]bool{}
	course := &Context{ID: rc.contextID}
	for _, m := range members {
		if m.UserID == "" || (m.Status != "" && m.Status != "Active") {
			continue
		}
		sync.Members++
		role := roleOf(m.Roles)
		if role == "" {
			sync.Skipped++
			continue
		}
		c := claims{Name: m.Name, GivenName: m.GivenName, FamilyName: m.FamilyName, Email: m.Email, DeploymentID: rc.deploymentID, Context: course}
		c.Subject = m.UserID
		before, err := s.match(ctx, s.db.Q(ctx), p, c)
		if err != nil {
			return sync, err
		}
		if _, _, err := s.provision(ctx, p, c, role); err != nil {
			if e, ok := errs.As(err); ok && e.Reason == "LEARNER_IS_STAFF" {
				sync.Skipped++
				continue
			}
			return sync, err
		}
		active[m.UserID] = true
		if before.memberRole != classRole(role) {
			sync.Added++
		}
	}
	if sync.Removed, err = s.removeInactive(ctx, classID, p.Issuer, active); err != nil {
		return sync, err
	}
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		if _, err := s.db.Q(ctx).Exec(ctx, `UPDATE lti_contexts SET synced_at = now() WHERE org_id = app_org_id() AND class_id = $1`, classID); err != nil {
			return fmt.Errorf("lti: record the roster's sync: %w", err)
		}
		return audit.Record(ctx, s.db, audit.Entry{Action: "lti.roster_synced", Actor: actor, Target: audit.Target{Type: "class", ID: classID},
			After: map[string]any{"platformId": p.ID, "members": sync.Members, "added": sync.Added, "removed": sync.Removed, "skipped": sync.Skipped}})
	})
	return sync, err
}

// removeInactive takes off the class's roster the members launched from
// issuer whose subjects are not in active; members added by hand stay.
func (s *Service) removeInactive(ctx context.Context, classID, issuer string, active map[string]bool) (int, error) {
	rows, err := s.db.Q(ctx).Query(ctx, `
		SELECT m.user_id, lu.subject FROM class_members m
		  JOIN lti_users lu ON lu.org_id = app_org_id() AND lu.user_id = m.user_id AND lu.issuer = $2
		 WHERE m.org_id = app_org_id() AND m.class_id = $1`, classID, issuer)
	if err != nil {
		return 0, fmt.Errorf("lti: read the class's launched members: %w", err)
	}
	type launched struct{ userID, subject string }
	members, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (launched, error) {
		var m launched
		return m, row.Scan(&m.userID, &m.subject)
	})
	if err != nil {
		return 0, fmt.Errorf("lti: read the class's launched members: %w", err)
	}
	var gone []string
	for _, m := range members {
		if !active[m.subject] {
			gone = append(gone, m.userID)
		}
	}
	for _, userID := range gone {
		if err := s.classes.RemoveMember(ctx, classID, userID); err != nil && !errs.Is(err, errs.KindNotFound) {
			return 0, err
		}
	}
	return len(gone), nil
}

// readMemberships reads every page of a membership container, following
// the Link headers' rel="next" (NRPS 2.0, 2.4.1).
func (s *Service) readMemberships(ctx context.Context, p Platform, first string) ([]member, error) {
	var all []member
	next := first
	for page := 0; next != ""; page++ {
		if page == maxRosterPages {
			return nil, errs.FailedPrecondition("ROSTER_TOO_LARGE", "The course's roster has more than %d pages.", maxRosterPages)
		}
		if err := s.checkServiceURL(next); err != nil {
			return nil, fmt.Errorf("%w: the roster's next page: %w", ErrPlatformRefused, err)
		}
		members, link, err := s.membershipPage(ctx, p, next)
		if err != nil {
			return nil, err
		}
		all = append(all, members...)
		if len(all) > classes.MaxMembers {
			return nil, errs.FailedPrecondition("ROSTER_TOO_LARGE", "The course's roster has more than %d members, the most a class holds.", classes.MaxMembers)
		}
		next = link
	}
	return all, nil
}

// membershipPage reads one page of memberships and the URL of the next.
func (s *Service) membershipPage(ctx context.Context, p Platform, target string) ([]member, string, error) {
	resp, err := s.serviceRequest(ctx, p, ScopeMemberships, http.MethodGet, target, membershipType, "", nil)
	if err != nil {
		return nil, "", rosterUnavailable(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRosterBytes+1))
	if err != nil {
		return nil, "", rosterUnavailable(err)
	}
	if err := statusError("memberships", resp, body); err != nil {
		return nil, "", rosterUnavailable(err)
	}
	if len(body) > maxRosterBytes {
		return nil, "", errs.FailedPrecondition("ROSTER_TOO_LARGE", "A page of the course's roster is larger than %d MiB.", maxRosterBytes>>20)
	}
	var container struct {
		Members []member `json:"members"`
	}
	if err := json.Unmarshal(body, &container); err != nil {
		return nil, "", rosterUnavailable(fmt.Errorf("the memberships are not JSON: %w", err))
	}
	return container.Members, nextLink(resp.Header.Values("Link"), target), nil
}

// rosterUnavailable is the error of a roster the platform did not give.
func rosterUnavailable(err error) error {
	return errs.Unavailable("ROSTER_UNAVAILABLE", "The course's platform did not give its roster: %v", err).WithCause(err)
}

// nextLink is the rel="next" target of Link header values (RFC 8288),
// resolved against the page's URL; "" when there is none.
func nextLink(values []string, base string) string {
	for _, v := range values {
		for _, link := range strings.Split(v, ",") {
			target, params, ok := strings.Cut(strings.TrimSpace(link), ";")
			target = strings.TrimSpace(target)
			if !ok || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
				continue
			}
			for _, param := range strings.Split(params, ";") {
				name, value, _ := strings.Cut(strings.TrimSpace(param), "=")
				if !strings.EqualFold(name, "rel") || !hasToken(strings.Trim(value, `"`), "next") {
					continue
				}
				b, err1 := url.Parse(base)
				ref, err2 := url.Parse(target[1 : len(target)-1])
				if err1 != nil || err2 != nil {
					return ""
				}
				return b.ResolveReference(ref).String()
			}
		}
	}
	return ""
}

// hasToken reports whether the space-separated list holds token.
func hasToken(list, token string) bool {
	for _, t := range strings.Fields(list) {
		if strings.EqualFold(t, token) {
			return true
		}
	}
	return false
}
