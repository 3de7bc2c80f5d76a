// Package serviceaccounts holds an organization's service accounts, its
// non-human callers, and the public keys whose signed assertions the OAuth
// provider exchanges for access tokens (the JWT bearer grant, RFC 7523).
package serviceaccounts

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// Service manages service accounts and their keys, with the caller's
// permissions, and finds them for the provider (identity.ServiceAccounts).
type Service struct{ db *store.DB }

// New returns the service on db.
func New(db *store.DB) *Service { return &Service{db: db} }

// ServiceAccount is a non-human caller of one organization.
type ServiceAccount struct {
	ID        string
	OrgID     string
	Name      string
	Role      tenancy.Role
	CreatedAt time.Time
	Disabled  bool
}

// MaxServiceAccounts bounds an organization's service accounts (decision
// 0175): one per system that calls as the organization, with room to
// spare, not a set that grows with every deployment.
const MaxServiceAccounts = 100

// CreateServiceAccount adds a service account with role (not owner).
func (s *Service) CreateServiceAccount(ctx context.Context, name string, role tenancy.Role) (ServiceAccount, error) {
	caller, err := tenancy.Authorize(ctx, tenancy.WriteUsers)
	if err != nil {
		return ServiceAccount{}, err
	}
	if name = strings.TrimSpace(name); name == "" || len(name) > 200 {
		return ServiceAccount{}, errs.Invalid("name", "is required (at most 200 characters)")
	}
	if !role.Valid() || role == tenancy.RoleOwner {
		return ServiceAccount{}, errs.Invalid("role", "must be admin, teacher or student")
	}
	sa := ServiceAccount{ID: ids.New(ids.ServiceAccount), OrgID: caller.OrgID, Name: name, Role: role}
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		n, err := s.db.CountLocked(ctx, "service_accounts", `SELECT count(*) FROM service_accounts WHERE org_id = app_org_id()`)
		if err != nil {
			return err
		}
		if n >= MaxServiceAccounts {
			return errs.Conflict("SERVICE_ACCOUNT_LIMIT", "an organization has at most %d service accounts; delete one to add another", MaxServiceAccounts)
		}
		q := s.db.Q(ctx)
		if err := q.QueryRow(ctx, `INSERT INTO service_accounts (id, org_id, name, role) VALUES ($1, app_org_id(), $2, $3) RETURNING created_at`,
			sa.ID, name, role).Scan(&sa.CreatedAt); err != nil {
			return fmt.Errorf("create service account: %w", err)
		}
		err = audit.Record(ctx, s.db, audit.Entry{Action: "service_account.created", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "service_account", ID: sa.ID}, After: map[string]any{"name": name, "role": string(role)}})
		return err
	})
	return sa, err
}

// ServiceAccounts lists the caller's organization's service accounts,
// newest first. Only operators create them, so the list is short.
func (s *Service) ServiceAccounts(ctx context.Context) ([]ServiceAccount, error) {
	if _, err := tenancy.Authorize(ctx, tenancy.WriteUsers); err != nil {
		return nil, err
	}
	rows, err := s.db.Q(ctx).Query(ctx, `SELECT id, org_id, name, role, created_at, disabled_at IS NOT NULL
		FROM service_accounts WHERE org_id = app_org_id() ORDER BY id DESC`)
	if err != nil {
		return nil, fmt.Errorf("list service accounts: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (ServiceAccount, error) {
		var a ServiceAccount
		return a, row.Scan(&a.ID, &a.OrgID, &a.Name, &a.Role, &a.CreatedAt, &a.Disabled)
	})
}

// MaxServiceAccountKeys bounds a service account's unrevoked keys
// (decision 0160): room to rotate a key per system that signs as the
// account, not a growing set of live keys.
const MaxServiceAccountKeys = 10

// AddServiceAccountKey registers a PEM-encoded RSA or ECDSA public key for
// signing JWT assertions and returns its key id (the assertion's "kid").
func (s *Service) AddServiceAccountKey(ctx context.Context, serviceAccountID, publicKeyPEM string) (string, error) {
	caller, err := tenancy.Authorize(ctx, tenancy.WriteUsers)
	if err != nil {
		return "", err
	}
	if _, err := parsePublicKey(publicKeyPEM); err != nil {
		return "", errs.Invalid("publicKey", "must be a PEM-encoded RSA or ECDSA public key")
	}
	if !ids.Valid(ids.ServiceAccount, serviceAccountID) {
		return "", errs.NotFound("service account")
	}
	keyID := ids.New(ids.ServiceAccountKey)
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		n, err := s.db.CountLocked(ctx, "service_account_keys:"+serviceAccountID, `SELECT count(*) FROM service_account_keys
			WHERE org_id = app_org_id() AND service_account_id = $1 AND revoked_at IS NULL`, serviceAccountID)
		if err != nil {
			return err
		}
		if n >= MaxServiceAccountKeys {
			return errs.Conflict("SERVICE_ACCOUNT_KEY_LIMIT", "a service account has at most %d active keys; revoke one to add another", MaxServiceAccountKeys)
		}
		tag, err := s.db.Q(ctx).Exec(ctx, `INSERT INTO service_account_keys (id, org_id, service_account_id, public_key_pem)
			SELECT $1, app_org_id(), id, $3 FROM service_accounts WHERE org_id = app_org_id() AND id = $2`,
			keyID, serviceAccountID, publicKeyPEM)
		if store.ForeignKey(err) != "" { // the account's deletion committed after the SELECT read it
			return errs.NotFound("service account")
		}
		if err != nil {
			return fmt.Errorf("add service account key: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return errs.NotFound("service account")
		}
		err = audit.Record(ctx, s.db, audit.Entry{Action: "service_account.key_added", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "service_account", ID: serviceAccountID}, After: map[string]any{"keyId": keyID}})
		return err
	})
	return keyID, err
}

// ServiceAccountKey describes a registered key, without the key itself.
type ServiceAccountKey struct {
	ID        string
	CreatedAt time.Time
	RevokedAt *time.Time
}

// ServiceAccountKeys lists a service account's keys, newest first.
func (s *Service) ServiceAccountKeys(ctx context.Context, serviceAccountID string) ([]ServiceAccountKey, error) {
	if _, err := tenancy.Authorize(ctx, tenancy.WriteUsers); err != nil {
		return nil, err
	}
	if !ids.Valid(ids.ServiceAccount, serviceAccountID) {
		return nil, errs.NotFound("service account")
	}
	var keys []ServiceAccountKey
	err := s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		var exists bool
		if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM service_accounts WHERE org_id = app_org_id() AND id = $1)`, serviceAccountID).Scan(&exists); err != nil {
			return fmt.Errorf("list service account keys: %w", err)
		}
		if !exists {
			return errs.NotFound("service account")
		}
		rows, err := q.Query(ctx, `SELECT id, created_at, revoked_at FROM service_account_keys
			WHERE org_id = app_org_id() AND service_account_id = $1 ORDER BY id DESC`, serviceAccountID)
		if err != nil {
			return fmt.Errorf("list service account keys: %w", err)
		}
		keys, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ServiceAccountKey, error) {
			var k ServiceAccountKey
			return k, row.Scan(&k.ID, &k.CreatedAt, &k.RevokedAt)
		})
		return err
	})
	return keys, err
}

// RevokeServiceAccountKey refuses the assertions key signs from now on.
// Access tokens it already obtained stay valid until they expire (at most
// identity.JWTAccessTokenTTL); SetServiceAccountDisabled stops those at
// once. Revoking a revoked key changes nothing.
func (s *Service) RevokeServiceAccountKey(ctx context.Context, keyID string) error {
	caller, err := tenancy.Authorize(ctx, tenancy.WriteUsers)
	if err != nil {
		return err
	}
	if !ids.Valid(ids.ServiceAccountKey, keyID) {
		return errs.NotFound("service account key")
	}
	return s.db.Tx(ctx, func(ctx context.Context) error {
		var accountID string
		var already bool
		err := s.db.Q(ctx).QueryRow(ctx, `
			UPDATE service_account_keys k SET revoked_at = coalesce(k.revoked_at, now())
			  FROM service_account_keys old
			 WHERE k.org_id = app_org_id() AND k.id = $1 AND old.id = k.id
			RETURNING k.service_account_id, old.revoked_at IS NOT NULL`, keyID).Scan(&accountID, &already)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.NotFound("service account key")
		}
		if err != nil || already {
			return err
		}
		return audit.Record(ctx, s.db, audit.Entry{Action: "service_account.key_revoked", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "service_account", ID: accountID}, After: map[string]any{"keyId": keyID}})
	})
}

// SetServiceAccountDisabled disables or re-enables a service account. A
// disabled account obtains no token and its tokens are refused on their
// next request, since the provider reads the account (Enabled) every time.
func (s *Service) SetServiceAccountDisabled(ctx context.Context, serviceAccountID string, disabled bool) error {
	caller, err := tenancy.Authorize(ctx, tenancy.WriteUsers)
	if err != nil {
		return err
	}
	action := "service_account.enabled"
	if disabled {
		action = "service_account.disabled"
	}
	if !ids.Valid(ids.ServiceAccount, serviceAccountID) {
		return errs.NotFound("service account")
	}
	return s.db.Tx(ctx, func(ctx context.Context) error {
		var was bool
		err := s.db.Q(ctx).QueryRow(ctx, `
			UPDATE service_accounts a SET disabled_at = CASE WHEN $2 THEN coalesce(a.disabled_at, now()) END
			  FROM service_accounts old
			 WHERE a.org_id = app_org_id() AND a.id = $1 AND old.id = a.id
			RETURNING old.disabled_at IS NOT NULL`, serviceAccountID, disabled).Scan(&was)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.NotFound("service account")
		}
		if err != nil || was == disabled {
			return err
		}
		return audit.Record(ctx, s.db, audit.Entry{Action: action, Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "service_account", ID: serviceAccountID}})
	})
}

// DeleteServiceAccount removes a service account and its keys. Its
// assertions are refused from then on, and so are its access tokens on
// their next request, since the provider reads the account (Enabled)
// every time. Its audit entries stay, naming it by id.
func (s *Service) DeleteServiceAccount(ctx context.Context, serviceAccountID string) error {
	caller, err := tenancy.Authorize(ctx, tenancy.WriteUsers)
	if err != nil {
		return err
	}
	if !ids.Valid(ids.ServiceAccount, serviceAccountID) {
		return errs.NotFound("service account")
	}
	return s.db.Tx(ctx, func(ctx context.Context) error {
		var name string
		var role tenancy.Role
		err := s.db.Q(ctx).QueryRow(ctx, `DELETE FROM service_accounts WHERE org_id = app_org_id() AND id = $1 RETURNING name, role`,
			serviceAccountID).Scan(&name, &role)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.NotFound("service account")
		}
		if err != nil {
			return fmt.Errorf("delete service account: %w", err)
		}
		return audit.Record(ctx, s.db, audit.Entry{Action: "service_account.deleted", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "service_account", ID: serviceAccountID}, Before: map[string]any{"name": name, "role": string(role)}})
	})
}

func parsePublicKey(pemText string) (any, error) {
	block, _ := pem.Decode([]byte(pemText))
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	return x509.ParsePKIXPublicKey(block.Bytes)
}

// Enabled returns the organization and role of an enabled service
// account, or errs.NotFound; the provider reads it for each assertion and
// each of its tokens.
func (s *Service) Enabled(ctx context.Context, id string) (orgID string, role tenancy.Role, err error) {
	err = s.db.Unscoped().QueryRow(ctx, `SELECT org_id, role FROM service_account_for_auth($1)`, id).Scan(&orgID, &role)
	if errors.Is(err, pgx.ErrNoRows) {
		err = errs.NotFound("service account")
	}
	return orgID, role, err
}

// PublicKey returns the registered key keyID and the service account it
// belongs to, or errs.NotFound; the provider checks an assertion's
// signature with it.
func (s *Service) PublicKey(ctx context.Context, keyID string) (accountID string, key any, err error) {
	var pemText string
	err = s.db.Unscoped().QueryRow(ctx, `SELECT service_account_id, public_key_pem FROM service_account_key_for_auth($1)`, keyID).
		Scan(&accountID, &pemText)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil, errs.NotFound("service account key")
	}
	if err != nil {
		return "", nil, err
	}
	key, err = parsePublicKey(pemText)
	return accountID, key, err
}
