package lti

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// managers are the roles that register platforms: an LMS registration
// decides who may sign in to the organization, as owners and admins do.
var managers = []tenancy.Role{tenancy.RoleOwner, tenancy.RoleAdmin}

// The permissions of platform registrations, those of the organization's
// settings (decision 0200).
var (
	ReadPlatforms  = tenancy.Permission{Scope: tenancy.ScopeOrgsRead, Roles: managers}
	WritePlatforms = tenancy.Permission{Scope: tenancy.ScopeOrgsWrite, Roles: managers}
)

// Bounds of a registration.
const (
	// MaxPlatforms bounds an organization's registrations.
	MaxPlatforms = 50
	// MaxDeployments bounds a registration's deployment ids.
	MaxDeployments = 100
	maxName        = 200
	maxIdentifier  = 255
)

// Platform is a learning platform (an LMS) registered to launch assessd.
type Platform struct {
	ID            string
	Name          string
	Issuer        string
	ClientID      string
	DeploymentIDs []string
	// AuthLoginURL is the platform's OIDC authorization endpoint, where a
	// login initiation sends the browser.
	AuthLoginURL string
	// AccessTokenURL grants the tool tokens for the platform's services.
	AccessTokenURL string
	// JWKSURL publishes the keys the platform signs its messages with.
	JWKSURL   string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// NewPlatform is the input of CreatePlatform.
type NewPlatform struct {
	Name, Issuer, ClientID                string
	DeploymentIDs                         []string
	AuthLoginURL, AccessTokenURL, JWKSURL string
}

// PlatformPatch changes the fields that are set.
type PlatformPatch struct {
	Name, Issuer, ClientID                *string
	DeploymentIDs                         *[]string
	AuthLoginURL, AccessTokenURL, JWKSURL *string
}

const platformColumns = `id, name, issuer, client_id, deployment_ids, auth_login_url, access_token_url, jwks_url, created_at, updated_at`

func scanPlatform(row pgx.Row) (Platform, error) {
	var p Platform
	err := row.Scan(&p.ID, &p.Name, &p.Issuer, &p.ClientID, &p.DeploymentIDs, &p.AuthLoginURL, &p.AccessTokenURL, &p.JWKSURL,
		&p.CreatedAt, &p.UpdatedAt)
	return p, err
}

func platformSnapshot(p Platform) map[string]any {
	return map[string]any{"name": p.Name, "issuer": p.Issuer, "clientId": p.ClientID, "deploymentIds": p.DeploymentIDs,
		"authLoginUrl": p.AuthLoginURL, "accessTokenUrl": p.AccessTokenURL, "jwksUrl": p.JWKSURL}
}

// ListPlatforms returns one page of the organization's registrations,
// oldest first.
func (s *Service) ListPlatforms(ctx context.Context, p paging.Page) ([]Platform, string, error) {
	if _, err := tenancy.Authorize(ctx, ReadPlatforms); err != nil {
		return nil, "", err
	}
	list, next, err := store.ListPage(ctx, s.db.Q(ctx), p, scanPlatform, func(p Platform) string { return p.ID }, `
		SELECT `+platformColumns+` FROM lti_platforms
		 WHERE org_id = app_org_id() AND id > $1 ORDER BY id LIMIT $2`, p.After, p.Limit())
	if err != nil {
		return nil, "", fmt.Errorf("list LTI platforms: %w", err)
	}
	return list, next, nil
}

// Platform returns one registration.
func (s *Service) Platform(ctx context.Context, id string) (Platform, error) {
	if _, err := tenancy.Authorize(ctx, ReadPlatforms); err != nil {
		return Platform{}, err
	}
	return s.loadPlatform(ctx, s.db.Q(ctx), id, store.NoLock)
}

// loadPlatform reads registration id of ctx's organization; no permission
// is checked (a launch reads the platform it is from).
func (s *Service) loadPlatform(ctx context.Context, q store.Querier, id string, lock store.RowLock) (Platform, error) {
	if !ids.Valid(ids.LTIPlatform, id) {
		return Platform{}, errs.NotFound("LTI platform")
	}
	p, err := scanPlatform(q.QueryRow(ctx, `SELECT `+platformColumns+` FROM lti_platforms
		WHERE org_id = app_org_id() AND id = $1`+string(lock), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Platform{}, errs.NotFound("LTI platform")
	}
	if err != nil {
		return Platform{}, fmt.Errorf("load LTI platform: %w", err)
	}
	return p, nil
}

// CreatePlatform registers a platform. Its issuer and client id together
// are unique across organizations, since a login initiation names its
// registration by them alone: 409 PLATFORM_TAKEN otherwise. Audited as
// lti_platform.created.
func (s *Service) CreatePlatform(ctx context.Context, in NewPlatform) (Platform, error) {
	caller, err := tenancy.Authorize(ctx, WritePlatforms)
	if err != nil {
		return Platform{}, err
	}
	p := Platform{Name: in.Name, Issuer: in.Issuer, ClientID: in.ClientID, DeploymentIDs: in.DeploymentIDs,
		AuthLoginURL: in.AuthLoginURL, AccessTokenURL: in.AccessTokenURL, JWKSURL: in.JWKSURL}
	if p, err = s.validPlatform(ctx, p); err != nil {
		return Platform{}, err
	}
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		n, err := s.db.CountLocked(ctx, "lti_platforms:"+caller.OrgID, `SELECT count(*) FROM lti_platforms WHERE org_id = app_org_id()`)
		if err != nil {
			return err
		}
		if n >= MaxPlatforms {
			return errs.Conflict("PLATFORM_LIMIT", "an organization registers at most %d LTI platforms; delete one to add another", MaxPlatforms)
		}
		p, err = scanPlatform(s.db.Q(ctx).QueryRow(ctx, `
			INSERT INTO lti_platforms (id, org_id, name, issuer, client_id, deployment_ids, auth_login_url, access_token_url, jwks_url, created_by)
			VALUES ($1, app_org_id(), $2, $3, $4, $5, $6, $7, $8, $9) RETURNING `+platformColumns,
			ids.New(ids.LTIPlatform), p.Name, p.Issuer, p.ClientID, p.DeploymentIDs, p.AuthLoginURL, p.AccessTokenURL, p.JWKSURL, caller.UserID))
		if err != nil {
			return fmt.Errorf("create LTI platform: %w", platformTaken(err))
		}
		return s.auditPlatform(ctx, caller, "lti_platform.created", p.ID, nil, platformSnapshot(p))
	})
	return p, err
}

// UpdatePlatform applies patch to a registration. Audited as
// lti_platform.updated.
func (s *Service) UpdatePlatform(ctx context.Context, id string, patch PlatformPatch) (Platform, error) {
	caller, err := tenancy.Authorize(ctx, WritePlatforms)
	if err != nil {
		return Platform{}, err
	}
	var p Platform
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		before, err := s.loadPlatform(ctx, q, id, store.ForNoKeyUpdate)
		if err != nil {
			return err
		}
		p = before
		for dst, v := range map[*string]*string{&p.Name: patch.Name, &p.Issuer: patch.Issuer, &p.ClientID: patch.ClientID,
			&p.AuthLoginURL: patch.AuthLoginURL, &p.AccessTokenURL: patch.AccessTokenURL, &p.JWKSURL: patch.JWKSURL} {
			if v != nil {
				*dst = *v
			}
		}
		if patch.DeploymentIDs != nil {
			p.DeploymentIDs = *patch.DeploymentIDs
		}
		if p, err = s.validPlatform(ctx, p); err != nil {
			return err
		}
		p, err = scanPlatform(q.QueryRow(ctx, `
			UPDATE lti_platforms SET name = $2, issuer = $3, client_id = $4, deployment_ids = $5, auth_login_url = $6,
			       access_token_url = $7, jwks_url = $8, updated_at = now()
			 WHERE org_id = app_org_id() AND id = $1 RETURNING `+platformColumns,
			id, p.Name, p.Issuer, p.ClientID, p.DeploymentIDs, p.AuthLoginURL, p.AccessTokenURL, p.JWKSURL))
		if err != nil {
			return fmt.Errorf("update LTI platform: %w", platformTaken(err))
		}
		return s.auditPlatform(ctx, caller, "lti_platform.updated", id, platformSnapshot(before), platformSnapshot(p))
	})
	return p, err
}

// DeletePlatform removes a registration: its launches are refused from
// then on; the users and classes they made stay. Audited as
// lti_platform.deleted.
func (s *Service) DeletePlatform(ctx context.Context, id string) error {
	caller, err := tenancy.Authorize(ctx, WritePlatforms)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		before, err := s.loadPlatform(ctx, q, id, store.ForUpdate)
		if err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `DELETE FROM lti_platforms WHERE org_id = app_org_id() AND id = $1`, id); err != nil {
			return fmt.Errorf("delete LTI platform: %w", err)
		}
		return s.auditPlatform(ctx, caller, "lti_platform.deleted", id, platformSnapshot(before), nil)
	})
}

func (s *Service) auditPlatform(ctx context.Context, caller *tenancy.Caller, action, id string, before, after map[string]any) error {
	return audit.Record(ctx, s.db, audit.Entry{Action: action, Actor: tenancy.ActorOf(caller),
		Target: audit.Target{Type: "lti_platform", ID: id}, Before: before, After: after})
}

// platformTaken is the answer to a write that met the unique index on
// issuer and client id.
func platformTaken(err error) error {
	if errors.Is(err, store.ErrUniqueViolation) {
		return errs.Conflict("PLATFORM_TAKEN", "a platform with this issuer and clientId is already registered")
	}
	return err
}

// validPlatform checks a registration and returns it with its name
// trimmed: the platform's identifiers as they are (a platform compares
// them exactly), its browser-facing URLs https, and the URLs the server
// fetches held to the egress rules (decision 0107).
func (s *Service) validPlatform(ctx context.Context, p Platform) (Platform, error) {
	p.Name = strings.TrimSpace(p.Name)
	switch {
	case p.Name == "":
		return p, errs.Invalid("name", "is required")
	case utf8.RuneCountInString(p.Name) > maxName:
		return p, errs.Invalid("name", "must be at most %d characters", maxName)
	}
	if err := s.checkBrowserURL("issuer", p.Issuer); err != nil {
		return p, err
	}
	if err := validIdentifier("clientId", p.ClientID); err != nil {
		return p, err
	}
	if p.DeploymentIDs == nil {
		p.DeploymentIDs = []string{}
	}
	if len(p.DeploymentIDs) > MaxDeployments {
		return p, errs.Invalid("deploymentIds", "at most %d deployment ids", MaxDeployments)
	}
	for i, d := range p.DeploymentIDs {
		if err := validIdentifier("deploymentIds", d); err != nil {
			return p, err
		}
		if slices.Contains(p.DeploymentIDs[:i], d) {
			return p, errs.Invalid("deploymentIds", "lists %q twice", d)
		}
	}
	if err := s.checkBrowserURL("authLoginUrl", p.AuthLoginURL); err != nil {
		return p, err
	}
	for _, f := range []struct{ name, url string }{{"accessTokenUrl", p.AccessTokenURL}, {"jwksUrl", p.JWKSURL}} {
		if f.url == "" {
			return p, errs.Invalid(f.name, "is required")
		}
		if err := s.targets.Check(ctx, f.name, f.url); err != nil {
			return p, err
		}
	}
	return p, nil
}

// validIdentifier checks an identifier a platform issued: present, at most
// maxIdentifier characters, printable and without white space.
func validIdentifier(field, v string) error {
	switch {
	case v == "":
		return errs.Invalid(field, "is required")
	case utf8.RuneCountInString(v) > maxIdentifier:
		return errs.Invalid(field, "must be at most %d characters", maxIdentifier)
	case strings.ContainsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }):
		return errs.Invalid(field, "must not contain white space or control characters")
	}
	return nil
}
