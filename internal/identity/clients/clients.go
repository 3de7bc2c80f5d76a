// Package clients registers an organization's OAuth clients, the apps its
// users sign in to with assessd, and keeps the clients it allowed scopes
// never granted by default (audit-logs:write), whoever registered them;
// with the developer pages that manage them.
package clients

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/identity"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// Service registers and manages OAuth clients and the organization's
// allowed clients, with the caller's permissions, and serves the
// developer pages of them.
type Service struct {
	db       *store.DB
	provider *identity.Provider
}

// New returns the service on db, beside the provider that authenticates
// the clients.
func New(db *store.DB, provider *identity.Provider) *Service {
	return &Service{db: db, provider: provider}
}

// Client is a registered OAuth client, without its secret.
type Client struct {
	ID           string
	OrgID        string
	Name         string
	Description  string
	RedirectURIs []string
	Scopes       []string
	Public       bool
	// AuditLogsWrite reports whether the caller's organization allows this
	// client to receive audit-logs:write.
	AuditLogsWrite bool
	CreatedAt      time.Time
}

// ClientInput is what a developer registers or edits.
type ClientInput struct {
	Name         string
	Description  string
	RedirectURIs []string
	// Scopes the client may request; empty means any.
	Scopes []string
	Public bool
	// AllowAuditLogsWrite lets the client receive audit-logs:write for the
	// caller's organization's users.
	AllowAuditLogsWrite bool
}

// manageClients is who registers and edits clients: owners and admins.
var manageClients = tenancy.Permission{Scope: tenancy.ScopeOrgsWrite, Roles: []tenancy.Role{tenancy.RoleOwner, tenancy.RoleAdmin}}

// maxRedirectURIs bounds a client's redirect URIs.
const maxRedirectURIs = 20

func (in *ClientInput) validate() error {
	in.Name = strings.TrimSpace(in.Name)
	in.Description = strings.TrimSpace(in.Description)
	if in.Name == "" || len(in.Name) > 100 {
		return errs.Invalid("name", "is required (at most 100 characters)")
	}
	if len(in.Description) > 500 {
		return errs.Invalid("description", "must be at most 500 characters")
	}
	var uris []string
	for _, u := range in.RedirectURIs {
		if u = strings.TrimSpace(u); u != "" && !slices.Contains(uris, u) {
			uris = append(uris, u)
		}
		// A form may list thousands: stop comparing once the count is
		// refused anyway.
		if len(uris) > maxRedirectURIs {
			break
		}
	}
	if len(uris) == 0 || len(uris) > maxRedirectURIs {
		return errs.Invalid("redirectUris", "enter 1 to 20 redirect URIs")
	}
	for _, u := range uris {
		if err := validateRedirectURI(u); err != nil {
			return err
		}
	}
	in.RedirectURIs = uris
	for _, s := range in.Scopes {
		if !slices.Contains(tenancy.AllScopes, tenancy.Scope(s)) {
			return errs.Invalid("scopes", "unknown scope %q", s)
		}
	}
	return nil
}

// validateRedirectURI admits absolute https URIs, and http only on the
// loopback interface (RFC 8252 native apps); never fragments.
func validateRedirectURI(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Fragment != "" {
		return errs.Invalid("redirectUris", "%q must be an absolute URL without a fragment", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
	}
	return errs.Invalid("redirectUris", "%q must use https (http is allowed only for localhost)", raw)
}

// CreateClient registers a client for the caller's organization and returns
// its secret (empty for public clients), which is shown only this once.
func (s *Service) CreateClient(ctx context.Context, in ClientInput) (Client, string, error) {
	caller, err := tenancy.Authorize(ctx, manageClients)
	if err != nil {
		return Client{}, "", err
	}
	if err := in.validate(); err != nil {
		return Client{}, "", err
	}
	c := Client{ID: ids.New(ids.Client), OrgID: caller.OrgID, Name: in.Name, Description: in.Description,
		RedirectURIs: in.RedirectURIs, Scopes: in.Scopes, Public: in.Public}
	var secret string
	var secretHash []byte
	if !in.Public {
		secret = "cs_" + identity.NewSecret()
		secretHash = identity.HashSecret(secret)
	}
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		if err := checkClientRoom(ctx, s.db, caller.OrgID); err != nil {
			return err
		}
		if err := q.QueryRow(ctx, `
			INSERT INTO oauth_clients (id, org_id, name, description, redirect_uris, secret_hash, scopes, created_by)
			VALUES ($1, app_org_id(), $2, $3, $4, $5, $6, $7) RETURNING created_at`,
			c.ID, c.Name, c.Description, c.RedirectURIs, secretHash, nonNil(c.Scopes), caller.UserID).Scan(&c.CreatedAt); err != nil {
			return fmt.Errorf("create client: %w", err)
		}
		if err := s.setAuditAllowance(ctx, caller, c.ID, in.AllowAuditLogsWrite); err != nil {
			return err
		}
		c.AuditLogsWrite = in.AllowAuditLogsWrite
		err := audit.Record(ctx, s.db, audit.Entry{Action: "oauth_client.created", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "oauth_client", ID: c.ID}, After: clientSnapshot(c)})
		return err
	})
	if err != nil {
		return Client{}, "", err
	}
	return c, secret, nil
}

// MaxClients bounds an organization's OAuth clients (decision 0159): one
// per app the organization builds or wires in, listed whole on the
// developer page.
const MaxClients = 50

// checkClientRoom refuses a client beyond MaxClients, counting under the
// organization's lock of client registrations.
func checkClientRoom(ctx context.Context, db *store.DB, org string) error {
	n, err := db.CountLocked(ctx, "oauth_clients:"+org, `SELECT count(*) FROM oauth_clients WHERE org_id = app_org_id()`)
	if err != nil {
		return err
	}
	if n >= MaxClients {
		return errs.Conflict("CLIENT_LIMIT", "an organization has at most %d OAuth clients; delete one to register another", MaxClients)
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// setAuditAllowance records whether the caller's organization lets client
// receive audit-logs:write.
func (s *Service) setAuditAllowance(ctx context.Context, caller *tenancy.Caller, clientID string, allow bool) error {
	q := s.db.Q(ctx)
	var err error
	if allow {
		_, err = q.Exec(ctx, `INSERT INTO oauth_client_audit_allowances (org_id, client_id, allowed_by)
			VALUES (app_org_id(), $1, $2) ON CONFLICT DO NOTHING`, clientID, caller.UserID)
	} else {
		if _, err = q.Exec(ctx, `DELETE FROM oauth_client_audit_allowances WHERE org_id = app_org_id() AND client_id = $1`, clientID); err == nil {
			err = stripAllowableScopes(ctx, s.db, clientID)
		}
	}
	return err
}

const clientColumns = `c.id, c.org_id, c.name, c.description, c.redirect_uris, c.scopes, c.secret_hash IS NULL, c.created_at,
	EXISTS (SELECT 1 FROM oauth_client_audit_allowances a WHERE a.org_id = app_org_id() AND a.client_id = c.id)`

func scanClient(row pgx.Row) (Client, error) {
	var c Client
	err := row.Scan(&c.ID, &c.OrgID, &c.Name, &c.Description, &c.RedirectURIs, &c.Scopes, &c.Public, &c.CreatedAt, &c.AuditLogsWrite)
	return c, err
}

// Clients lists the caller's organization's clients, newest first.
func (s *Service) Clients(ctx context.Context) ([]Client, error) {
	if _, err := tenancy.Authorize(ctx, manageClients); err != nil {
		return nil, err
	}
	rows, err := s.db.Q(ctx).Query(ctx, `SELECT `+clientColumns+` FROM oauth_clients c WHERE c.org_id = app_org_id() ORDER BY c.id DESC`)
	if err != nil {
		return nil, fmt.Errorf("list clients: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Client, error) { return scanClient(r) })
}

// Client returns one of the caller's organization's clients.
func (s *Service) Client(ctx context.Context, id string) (Client, error) {
	if _, err := tenancy.Authorize(ctx, manageClients); err != nil {
		return Client{}, err
	}
	c, err := scanClient(s.db.Q(ctx).QueryRow(ctx, `SELECT `+clientColumns+` FROM oauth_clients c WHERE c.org_id = app_org_id() AND c.id = $1`, id))
	if err == pgx.ErrNoRows {
		return Client{}, errs.NotFound("oauth client")
	}
	return c, err
}

// UpdateClient replaces a client's name, description, redirect URIs and
// scopes (its type, public or confidential, is fixed).
func (s *Service) UpdateClient(ctx context.Context, id string, in ClientInput) (Client, error) {
	caller, err := tenancy.Authorize(ctx, manageClients)
	if err != nil {
		return Client{}, err
	}
	if err := in.validate(); err != nil {
		return Client{}, err
	}
	var c Client
	// Withdrawing audit-logs:write narrows the client's grants.
	err = s.provider.ChangeCredentials(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		tag, err := q.Exec(ctx, `UPDATE oauth_clients SET name = $2, description = $3, redirect_uris = $4, scopes = $5, updated_at = now()
			WHERE org_id = app_org_id() AND id = $1`, id, in.Name, in.Description, in.RedirectURIs, nonNil(in.Scopes))
		if err != nil {
			return fmt.Errorf("update client: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return errs.NotFound("oauth client")
		}
		if err := s.setAuditAllowance(ctx, caller, id, in.AllowAuditLogsWrite); err != nil {
			return err
		}
		if c, err = scanClient(q.QueryRow(ctx, `SELECT `+clientColumns+` FROM oauth_clients c WHERE c.org_id = app_org_id() AND c.id = $1`, id)); err != nil {
			return err
		}
		err = audit.Record(ctx, s.db, audit.Entry{Action: "oauth_client.updated", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "oauth_client", ID: id}, After: clientSnapshot(c)})
		return err
	})
	return c, err
}

// RotateClientSecret replaces a confidential client's secret and returns
// the new one, shown only this once; the old one stops working at once.
func (s *Service) RotateClientSecret(ctx context.Context, id string) (string, error) {
	caller, err := tenancy.Authorize(ctx, manageClients)
	if err != nil {
		return "", err
	}
	secret := "cs_" + identity.NewSecret()
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		tag, err := q.Exec(ctx, `UPDATE oauth_clients SET secret_hash = $2, updated_at = now()
			WHERE org_id = app_org_id() AND id = $1 AND secret_hash IS NOT NULL`, id, identity.HashSecret(secret))
		if err != nil {
			return fmt.Errorf("rotate client secret: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return errs.NotFound("oauth client")
		}
		err = audit.Record(ctx, s.db, audit.Entry{Action: "oauth_client.secret_rotated", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "oauth_client", ID: id}})
		return err
	})
	return secret, err
}

// DeleteClient removes a client; every grant and token it holds goes with it.
func (s *Service) DeleteClient(ctx context.Context, id string) error {
	caller, err := tenancy.Authorize(ctx, manageClients)
	if err != nil {
		return err
	}
	return s.provider.ChangeCredentials(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		tag, err := q.Exec(ctx, `DELETE FROM oauth_clients WHERE org_id = app_org_id() AND id = $1`, id)
		if err != nil {
			return fmt.Errorf("delete client: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return errs.NotFound("oauth client")
		}
		if err := tenancy.NotifyCredentialsChanged(ctx, s.db); err != nil {
			return err
		}
		err = audit.Record(ctx, s.db, audit.Entry{Action: "oauth_client.deleted", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "oauth_client", ID: id}})
		return err
	})
}

func clientSnapshot(c Client) map[string]any {
	uris := make([]any, len(c.RedirectURIs))
	for i, u := range c.RedirectURIs {
		uris[i] = u
	}
	return map[string]any{"name": c.Name, "description": c.Description, "redirectUris": uris, "public": c.Public}
}
