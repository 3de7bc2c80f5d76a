package tenancy

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/store"
)

// Service implements organizations, users, API keys and the audit log API
// on top of PostgreSQL.
type Service struct {
	db    *store.DB
	creds *credentialCache
	uses  keyUses
	// UserEvents records what integrators hear of each change to a user
	// (the webhooks' user.* events, wired in by internal/app); nil records
	// nothing.
	UserEvents UserEvents
}

// UserChange is what happened to a user.
type UserChange string

// The changes UserEvents hears of.
const (
	UserCreated UserChange = "created"
	UserUpdated UserChange = "updated"
	UserDeleted UserChange = "deleted"
)

// UserEvents is called inside the transaction of a change to a user (ctx
// is the transaction's), after the change and its audit entry, with the
// user as it now is (as it last was, once deleted). What it writes commits
// or rolls back with the change, and its error rolls the change back.
// Tenancy declares it so that it imports no feature package.
type UserEvents func(ctx context.Context, change UserChange, u User) error

// userChanged hands a change to UserEvents, if any.
func (s *Service) userChanged(ctx context.Context, change UserChange, u User) error {
	if s.UserEvents == nil {
		return nil
	}
	return s.UserEvents(ctx, change, u)
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
