package tenancy

import (
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/webhooks/event"
)

// Service implements organizations, users, API keys and the audit log API
// on top of PostgreSQL.
type Service struct {
	db    *store.DB
	creds *credentialCache
	uses  keyUses
	// Events records the user.* webhook events; nil records none.
	Events *event.Recorder
}

// NewService returns a Service using db.
func NewService(db *store.DB) *Service {
	return &Service{db: db, creds: newCredentialCache()}
}

// KindSystem is the operator acting through the assessd command line. It is
// never produced by network authentication.
const KindSystem Kind = "system"

// SystemCaller is the caller of operator commands for organization orgID:
// every scope, owner role, attributed to the system in the audit log.
func SystemCaller(orgID string) *Caller {
	return &Caller{Kind: KindSystem, OrgID: orgID, UserID: "cli", Role: RoleOwner, Scopes: AllScopes}
}

// ActorOf is how c appears in the audit log.
func ActorOf(c *Caller) audit.Actor {
	switch c.Kind {
	case KindSystem:
		return audit.Actor{Kind: audit.ActorSystem, ID: c.UserID}
	case KindJWT:
		return audit.Actor{Kind: audit.ActorServiceAccount, ID: c.UserID}
	}
	return audit.Actor{Kind: audit.ActorUser, ID: c.UserID, ClientID: c.ClientID}
}

func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
