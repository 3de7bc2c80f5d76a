package identity

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// What the packages registering clients and showing the account read and
// change of the provider's clients and grants.

// ConnectedApp is a client holding a live grant of a user.
type ConnectedApp struct {
	ClientID, Name string
	// Scopes are those of its live grants, sorted.
	Scopes []string
	// Since is when the first of them was made.
	Since time.Time
}

// ConnectedApps lists the clients holding a live grant of userID, of the
// organization in ctx, the longest connected first.
func (p *Provider) ConnectedApps(ctx context.Context, userID string) ([]ConnectedApp, error) {
	rows, err := p.db.Q(ctx).Query(ctx, `
		SELECT client_id, array_agg(DISTINCT s ORDER BY s), min(created_at)
		  FROM oauth_grants, unnest(scopes) s
		 WHERE org_id = app_org_id() AND user_id = $1 AND revoked_at IS NULL
		 GROUP BY client_id ORDER BY min(created_at)`, userID)
	if err != nil {
		return nil, err
	}
	apps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ConnectedApp, error) {
		var a ConnectedApp
		return a, r.Scan(&a.ClientID, &a.Scopes, &a.Since)
	})
	if err != nil {
		return nil, err
	}
	for i, a := range apps {
		c, err := p.storage.client(ctx, a.ClientID)
		if err != nil {
			return nil, err
		}
		apps[i].Name = c.name
	}
	return apps, nil
}

// RevokeApp revokes every grant of userID to clientID, as the user asked
// on the account page; the app's tokens stop working at once.
func (p *Provider) RevokeApp(ctx context.Context, userID, clientID string) error {
	return p.storage.revokeApp(ctx, userID, clientID, revokedByUser)
}

// ClientExists reports whether id is a client registered by any
// organization.
func (p *Provider) ClientExists(ctx context.Context, id string) (bool, error) {
	_, err := p.storage.client(ctx, id)
	if errors.As(err, new(errNotFound)) {
		return false, nil
	}
	return err == nil, err
}

// ChangeCredentials runs fn, which may revoke or narrow access tokens, in
// one transaction, and then drops this instance's cached credentials; fn
// notifies the other instances (tenancy.NotifyCredentialsChanged).
func (p *Provider) ChangeCredentials(ctx context.Context, fn func(ctx context.Context) error) error {
	return p.storage.changeCredentials(ctx, fn)
}
