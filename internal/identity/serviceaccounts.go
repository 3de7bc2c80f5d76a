package identity

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/jackc/pgx/v5"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/tenancy"
)

// ServiceAccount is a non-human caller of one organization.
type ServiceAccount struct {
	ID        string
	OrgID     string
	Name      string
	Role      tenancy.Role
	CreatedAt time.Time
}

// CreateServiceAccount adds a service account with role (not owner).
func (p *Provider) CreateServiceAccount(ctx context.Context, name string, role tenancy.Role) (ServiceAccount, error) {
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
	err = p.db.Tx(ctx, func(ctx context.Context) error {
		q := p.db.Q(ctx)
		if err := q.QueryRow(ctx, `INSERT INTO service_accounts (id, org_id, name, role) VALUES ($1, app_org_id(), $2, $3) RETURNING created_at`,
			sa.ID, name, role).Scan(&sa.CreatedAt); err != nil {
			return fmt.Errorf("create service account: %w", err)
		}
		err := audit.Record(ctx, p.db, audit.Entry{Action: "service_account.created", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "service_account", ID: sa.ID}, After: map[string]any{"name": name, "role": string(role)}})
		return err
	})
	return sa, err
}

// AddServiceAccountKey registers a PEM-encoded RSA or ECDSA public key for
// signing JWT assertions and returns its key id (the assertion's "kid").
func (p *Provider) AddServiceAccountKey(ctx context.Context, serviceAccountID, publicKeyPEM string) (string, error) {
	caller, err := tenancy.Authorize(ctx, tenancy.WriteUsers)
	if err != nil {
		return "", err
	}
	if _, err := parsePublicKey(publicKeyPEM); err != nil {
		return "", errs.Invalid("publicKey", "must be a PEM-encoded RSA or ECDSA public key")
	}
	keyID := ids.New("sak_")
	err = p.db.Tx(ctx, func(ctx context.Context) error {
		q := p.db.Q(ctx)
		tag, err := q.Exec(ctx, `INSERT INTO service_account_keys (id, org_id, service_account_id, public_key_pem)
			SELECT $1, app_org_id(), id, $3 FROM service_accounts WHERE org_id = app_org_id() AND id = $2`,
			keyID, serviceAccountID, publicKeyPEM)
		if err != nil {
			return fmt.Errorf("add service account key: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return errs.NotFound("service account")
		}
		err = audit.Record(ctx, p.db, audit.Entry{Action: "service_account.key_added", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "service_account", ID: serviceAccountID}, After: map[string]any{"keyId": keyID}})
		return err
	})
	return keyID, err
}

func parsePublicKey(pemText string) (any, error) {
	block, _ := pem.Decode([]byte(pemText))
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	return x509.ParsePKIXPublicKey(block.Bytes)
}

// serviceAccount returns the organization and role of an enabled service
// account.
func (s *storage) serviceAccount(ctx context.Context, id string) (orgID string, role tenancy.Role, err error) {
	err = s.db.Unscoped().QueryRow(ctx, `SELECT org_id, role FROM service_account_for_auth($1)`, id).Scan(&orgID, &role)
	if errors.Is(err, pgx.ErrNoRows) {
		err = errNotFound{"service account"}
	}
	return orgID, role, err
}

// GetKeyByIDAndClientID returns the registered key that signed a JWT
// assertion (RFC 7523); clientID is the assertion's issuer, the service
// account id.
func (s *storage) GetKeyByIDAndClientID(ctx context.Context, keyID, clientID string) (*jose.JSONWebKey, error) {
	var orgID, saID, pemText, role string
	err := s.db.Unscoped().QueryRow(ctx, `SELECT org_id, service_account_id, public_key_pem, role FROM service_account_key_for_auth($1)`, keyID).
		Scan(&orgID, &saID, &pemText, &role)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && saID != clientID) {
		return nil, errNotFound{"key"}
	}
	if err != nil {
		return nil, err
	}
	key, err := parsePublicKey(pemText)
	if err != nil {
		return nil, err
	}
	return &jose.JSONWebKey{Key: key, KeyID: keyID, Use: "sig"}, nil
}

// ValidateJWTProfileScopes narrows the requested scopes to what the
// service account's role allows (never audit-logs:write); no scope asks
// for all of them.
func (s *storage) ValidateJWTProfileScopes(ctx context.Context, serviceAccountID string, requested []string) ([]string, error) {
	_, role, err := s.serviceAccount(ctx, serviceAccountID)
	if err != nil {
		return nil, err
	}
	allowed := tenancy.APIKeyScopes(role)
	var out []string
	for _, sc := range allowed {
		if len(requested) == 0 || slices.Contains(requested, string(sc)) {
			out = append(out, string(sc))
		}
	}
	return out, nil
}

// JWTProfileTokenType makes service-account access tokens signed JWTs.
func (s *storage) JWTProfileTokenType(context.Context, op.TokenRequest) (op.AccessTokenType, error) {
	return op.AccessTokenTypeJWT, nil
}
