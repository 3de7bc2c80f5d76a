package clients

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// AllowedClient is an OAuth client, registered by any organization, that
// the caller's organization allowed scopes never granted by default.
type AllowedClient struct {
	ClientID    string
	Name        string
	Description string
	Scopes      []string
	// AllowedBy is the user who allowed it.
	AllowedBy string
	CreatedAt time.Time
}

// AllowableScopes are the scopes an organization must allow a client
// before its users' tokens may carry them.
var AllowableScopes = []string{string(tenancy.ScopeAuditLogsWrite)}

// ReadAllowedClients is who lists the organization's allowed clients:
// owners and admins, with orgs:read; writeAllowedClients, who changes
// them, needs orgs:write.
var (
	ReadAllowedClients  = tenancy.Permission{Scope: tenancy.ScopeOrgsRead, Roles: manageClients.Roles}
	writeAllowedClients = manageClients
)

// allowedClientQuery reads allowances with their client's name through the
// provider's cross-tenant client lookup: most allowed clients belong to
// other organizations, whose rows row-level security hides.
const allowedClientQuery = `
	SELECT a.client_id, c.name, c.description, a.allowed_by, a.created_at
	  FROM oauth_client_audit_allowances a, LATERAL oauth_client_for_auth(a.client_id) c
	 WHERE a.org_id = app_org_id()`

func scanAllowedClient(row pgx.Row) (AllowedClient, error) {
	a := AllowedClient{Scopes: slices.Clone(AllowableScopes)}
	err := row.Scan(&a.ClientID, &a.Name, &a.Description, &a.AllowedBy, &a.CreatedAt)
	return a, err
}

// AllowedClients lists the clients the caller's organization allowed, by
// client id.
func (s *Service) AllowedClients(ctx context.Context, page paging.Page) ([]AllowedClient, string, error) {
	if _, err := tenancy.Authorize(ctx, ReadAllowedClients); err != nil {
		return nil, "", err
	}
	list, next, err := store.ListPage(ctx, s.db.Q(ctx), page, scanAllowedClient, func(a AllowedClient) string { return a.ClientID },
		allowedClientQuery+` AND a.client_id > $1 ORDER BY a.client_id LIMIT $2`, page.After, page.Limit())
	if err != nil {
		return nil, "", fmt.Errorf("list allowed clients: %w", err)
	}
	return list, next, nil
}

// AllowClient lets clientID receive scopes for the caller's organization's
// users. Allowing an allowed client again changes nothing and is not
// audited again.
func (s *Service) AllowClient(ctx context.Context, clientID string, scopes []string) (AllowedClient, error) {
	caller, err := tenancy.Authorize(ctx, writeAllowedClients)
	if err != nil {
		return AllowedClient{}, err
	}
	if len(scopes) == 0 {
		return AllowedClient{}, errs.Invalid("scopes", "must list the scopes to allow: %v", AllowableScopes)
	}
	for _, sc := range scopes {
		if !slices.Contains(AllowableScopes, sc) {
			return AllowedClient{}, errs.Invalid("scopes", "%q cannot be allowed: only %v need allowing", sc, AllowableScopes)
		}
	}
	notClient := errs.Invalid("clientId", "is not a registered OAuth client")
	exists, err := s.provider.ClientExists(ctx, clientID)
	if err != nil {
		return AllowedClient{}, err
	}
	if !exists {
		return AllowedClient{}, notClient
	}
	var out AllowedClient
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		tag, err := q.Exec(ctx, `INSERT INTO oauth_client_audit_allowances (org_id, client_id, allowed_by)
			VALUES (app_org_id(), $1, $2) ON CONFLICT DO NOTHING`, clientID, caller.UserID)
		// The client is another organization's, out of this one's reach
		// to lock: its deletion can commit after the lookup above.
		if store.ForeignKey(err) != "" {
			return notClient
		}
		if err != nil {
			return fmt.Errorf("allow client: %w", err)
		}
		if out, err = scanAllowedClient(q.QueryRow(ctx, allowedClientQuery+` AND a.client_id = $1`, clientID)); err != nil {
			return fmt.Errorf("allow client: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		err = audit.Record(ctx, s.db, audit.Entry{Action: "org.client_allowed", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "oauth_client", ID: clientID}, After: map[string]any{"scopes": []any{AllowableScopes[0]}}})
		return err
	})
	return out, err
}

// RemoveAllowedClient withdraws what the caller's organization allowed
// clientID. The scopes leave the client's existing grants in the
// organization too, so its tokens lose them on their next request.
func (s *Service) RemoveAllowedClient(ctx context.Context, clientID string) error {
	caller, err := tenancy.Authorize(ctx, writeAllowedClients)
	if err != nil {
		return err
	}
	return s.provider.ChangeCredentials(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		tag, err := q.Exec(ctx, `DELETE FROM oauth_client_audit_allowances WHERE org_id = app_org_id() AND client_id = $1`, clientID)
		if err != nil {
			return fmt.Errorf("remove allowed client: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return errs.NotFound("allowed client")
		}
		if err := stripAllowableScopes(ctx, s.db, clientID); err != nil {
			return err
		}
		err = audit.Record(ctx, s.db, audit.Entry{Action: "org.client_disallowed", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "oauth_client", ID: clientID}, Before: map[string]any{"scopes": []any{AllowableScopes[0]}}})
		return err
	})
}

// stripAllowableScopes removes the scopes that need allowing from
// clientID's grants in the current organization, and has every instance
// forget the access tokens it verified with them.
func stripAllowableScopes(ctx context.Context, db *store.DB, clientID string) error {
	_, err := db.Q(ctx).Exec(ctx, `UPDATE oauth_grants SET scopes = array(SELECT s FROM unnest(scopes) s WHERE s <> ALL($2))
		WHERE org_id = app_org_id() AND client_id = $1`, clientID, AllowableScopes)
	if err != nil {
		return fmt.Errorf("remove allowed scopes from grants: %w", err)
	}
	return tenancy.NotifyCredentialsChanged(ctx, db)
}
