package tenancy

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/bcrypt"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
)

// User is a person in one organization.
type User struct {
	ID        string
	OrgID     string
	Email     string
	Name      string
	Role      Role
	Metadata  Metadata
	CreatedAt time.Time
	UpdatedAt time.Time
}

// NewUser is the input of CreateUser.
type NewUser struct {
	Email    string
	Name     string
	Role     Role
	Password string
	Metadata MetadataPatch
}

// UserPatch changes the fields that are set; Metadata is merged.
type UserPatch struct {
	Name     *string
	Email    *string
	Role     *Role
	Metadata MetadataPatch
}

// UserFilter narrows ListUsers.
type UserFilter struct {
	Role  Role
	Email string
}

// Password bounds; bcrypt reads at most 72 bytes.
const (
	minPasswordLen = 8
	maxPasswordLen = 72
)

const userColumns = `id, org_id, email, name, role, metadata, created_at, updated_at`

func scanUser(row pgx.Row) (User, error) {
	var u User
	err := row.Scan(&u.ID, &u.OrgID, &u.Email, &u.Name, &u.Role, &u.Metadata, &u.CreatedAt, &u.UpdatedAt)
	return u, err
}

func validateEmail(email string) (string, error) {
	email = strings.TrimSpace(email)
	if email == "" {
		return "", errs.Invalid("email", "is required")
	}
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Address != email || len(email) > 254 {
		return "", errs.Invalid("email", "must be a plain email address such as ada@example.com")
	}
	return email, nil
}

func hashPassword(pw string) (string, error) {
	if len(pw) < minPasswordLen || len(pw) > maxPasswordLen {
		return "", errs.Invalid("password", "must be %d to %d bytes long", minPasswordLen, maxPasswordLen)
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(h), nil
}

// mayManageRole reports whether caller may give or take role r: only an
// owner grants, changes or removes the owner role.
func mayManageRole(c *Caller, r Role) error {
	if r == RoleOwner && c.Role != RoleOwner {
		return errs.Forbidden("ROLE_NOT_ALLOWED", "only an owner may manage owners")
	}
	return nil
}

// ListUsers returns one page of the organization's users, oldest first.
func (s *Service) ListUsers(ctx context.Context, f UserFilter, p paging.Page) ([]User, string, error) {
	if _, err := Authorize(ctx, ReadUsers); err != nil {
		return nil, "", err
	}
	if f.Role != "" && !f.Role.Valid() {
		return nil, "", errs.Invalid("role", "must be owner, admin, teacher or student")
	}
	users, next, err := store.ListPage(ctx, s.db.Q(ctx), p, scanUser, func(u User) string { return u.ID }, `
		SELECT `+userColumns+` FROM users
		 WHERE org_id = app_org_id()
		   AND ($1 = '' OR role = $1)
		   AND ($2 = '' OR lower(email) = lower($2))
		   AND id > $3
		 ORDER BY id LIMIT $4`, string(f.Role), f.Email, p.After, p.Limit())
	if err != nil {
		return nil, "", fmt.Errorf("list users: %w", err)
	}
	return users, next, nil
}

// User returns one user of the organization.
func (s *Service) User(ctx context.Context, id string) (User, error) {
	if _, err := Authorize(ctx, ReadUsers); err != nil {
		return User{}, err
	}
	return s.loadUser(ctx, s.db.Q(ctx), id, store.NoLock)
}

func (s *Service) loadUser(ctx context.Context, q store.Querier, id string, lock store.RowLock) (User, error) {
	if !ids.Valid(ids.User, id) {
		return User{}, errs.Invalid("id", "must be a user id (usr_...)")
	}
	sql := `SELECT ` + userColumns + ` FROM users WHERE org_id = app_org_id() AND id = $1`
	sql += string(lock)
	u, err := scanUser(q.QueryRow(ctx, sql, id))
	if isNoRows(err) {
		return User{}, errs.NotFound("user")
	}
	if err != nil {
		return User{}, fmt.Errorf("load user: %w", err)
	}
	return u, nil
}

// CreateUser adds a user to the caller's organization.
func (s *Service) CreateUser(ctx context.Context, in NewUser) (User, error) {
	caller, err := Authorize(ctx, WriteUsers)
	if err != nil {
		return User{}, err
	}
	email, err := validateEmail(in.Email)
	if err != nil {
		return User{}, err
	}
	name, err := validateName("name", in.Name)
	if err != nil {
		return User{}, err
	}
	if in.Role == "" {
		in.Role = RoleStudent
	}
	if !in.Role.Valid() {
		return User{}, errs.Invalid("role", "must be owner, admin, teacher or student")
	}
	if err := mayManageRole(caller, in.Role); err != nil {
		return User{}, err
	}
	meta, err := Metadata{}.Apply(in.Metadata)
	if err != nil {
		return User{}, err
	}
	var hash *string
	if in.Password != "" {
		h, err := hashPassword(in.Password)
		if err != nil {
			return User{}, err
		}
		hash = &h
	}
	var u User
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		u, err = scanUser(q.QueryRow(ctx, `
			INSERT INTO users (id, org_id, email, name, role, password_hash, metadata)
			VALUES ($1, app_org_id(), $2, $3, $4, $5, $6::jsonb) RETURNING `+userColumns,
			ids.New(ids.User), email, name, in.Role, hash, store.JSON{V: meta}))
		if errors.Is(err, store.ErrUniqueViolation) {
			return errs.Conflict("EMAIL_TAKEN", "a user with this email already exists in the organization")
		}
		if err != nil {
			return fmt.Errorf("create user: %w", err)
		}
		if err = audit.Record(ctx, s.db, audit.Entry{
			Action: "user.created", Actor: ActorOf(caller), Target: audit.Target{Type: "user", ID: u.ID},
			After: userSnapshot(u),
		}); err != nil {
			return err
		}
		return s.userChanged(ctx, UserCreated, u)
	})
	return u, err
}

// UpdateUser applies p to user id.
func (s *Service) UpdateUser(ctx context.Context, id string, p UserPatch) (User, error) {
	caller, err := Authorize(ctx, WriteUsers)
	if err != nil {
		return User{}, err
	}
	return s.updateUser(ctx, caller, id, p)
}

func (s *Service) updateUser(ctx context.Context, caller *Caller, id string, p UserPatch) (User, error) {
	var u User
	var roleChanged bool
	err := s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		before, err := s.loadUser(ctx, q, id, store.ForNoKeyUpdate)
		if err != nil {
			return err
		}
		u = before
		if p.Name != nil {
			if u.Name, err = validateName("name", *p.Name); err != nil {
				return err
			}
		}
		if p.Email != nil {
			if u.Email, err = validateEmail(*p.Email); err != nil {
				return err
			}
		}
		if p.Role != nil && *p.Role != before.Role {
			if !p.Role.Valid() {
				return errs.Invalid("role", "must be owner, admin, teacher or student")
			}
			if err := mayManageRole(caller, before.Role); err != nil {
				return err
			}
			if err := mayManageRole(caller, *p.Role); err != nil {
				return err
			}
			if before.Role == RoleOwner {
				if err := s.ensureAnotherOwner(ctx, q, id); err != nil {
					return err
				}
			}
			u.Role = *p.Role
		}
		if u.Metadata, err = before.Metadata.Apply(p.Metadata); err != nil {
			return err
		}
		u, err = scanUser(q.QueryRow(ctx, `
			UPDATE users SET name = $2, email = $3, role = $4, metadata = $5::jsonb, updated_at = now()
			 WHERE org_id = app_org_id() AND id = $1 RETURNING `+userColumns,
			id, u.Name, u.Email, u.Role, store.JSON{V: u.Metadata}))
		if errors.Is(err, store.ErrUniqueViolation) {
			return errs.Conflict("EMAIL_TAKEN", "a user with this email already exists in the organization")
		}
		if err != nil {
			return fmt.Errorf("update user: %w", err)
		}
		// Cached credentials hold the user's role and nothing else a
		// patch changes, so only a role change purges them everywhere.
		if roleChanged = u.Role != before.Role; roleChanged {
			if err := NotifyCredentialsChanged(ctx, s.db); err != nil {
				return err
			}
		}
		if err = audit.Record(ctx, s.db, audit.Entry{
			Action: "user.updated", Actor: ActorOf(caller), Target: audit.Target{Type: "user", ID: u.ID},
			Before: userSnapshot(before), After: userSnapshot(u),
		}); err != nil {
			return err
		}
		return s.userChanged(ctx, UserUpdated, u)
	})
	if err == nil && roleChanged {
		s.creds.purge() // a role change alters what the user's keys may do
	}
	return u, err
}

// DeleteUser removes user id and every API key the user holds.
func (s *Service) DeleteUser(ctx context.Context, id string) error {
	caller, err := Authorize(ctx, WriteUsers)
	if err != nil {
		return err
	}
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		u, err := s.loadUser(ctx, q, id, store.ForUpdate)
		if err != nil {
			return err
		}
		if err := mayManageRole(caller, u.Role); err != nil {
			return err
		}
		if u.Role == RoleOwner {
			if err := s.ensureAnotherOwner(ctx, q, id); err != nil {
				return err
			}
		}
		if _, err := q.Exec(ctx, `DELETE FROM users WHERE org_id = app_org_id() AND id = $1`, id); err != nil {
			return fmt.Errorf("delete user: %w", err)
		}
		if err := NotifyCredentialsChanged(ctx, s.db); err != nil {
			return err
		}
		if err = audit.Record(ctx, s.db, audit.Entry{
			Action: "user.deleted", Actor: ActorOf(caller), Target: audit.Target{Type: "user", ID: id},
			Before: userSnapshot(u),
		}); err != nil {
			return err
		}
		// The deleted user as it last was.
		return s.userChanged(ctx, UserDeleted, u)
	})
	if err == nil {
		s.creds.purge()
	}
	return err
}

// ensureAnotherOwner refuses to remove the organization's last owner.
func (s *Service) ensureAnotherOwner(ctx context.Context, q store.Querier, id string) error {
	var others int
	if err := q.QueryRow(ctx, `SELECT count(*) FROM users WHERE org_id = app_org_id() AND role = 'owner' AND id <> $1`, id).Scan(&others); err != nil {
		return fmt.Errorf("count owners: %w", err)
	}
	if others == 0 {
		return errs.Conflict("LAST_OWNER", "an organization must keep at least one owner")
	}
	return nil
}

// Me returns the caller's own user.
func (s *Service) Me(ctx context.Context) (User, error) {
	caller, err := Authorize(ctx, ReadProfile)
	if err != nil {
		return User{}, err
	}
	if caller.Kind == KindJWT {
		return User{}, errs.Forbidden("CALLER_KIND_NOT_ALLOWED", "service accounts have no user profile")
	}
	return s.loadUser(ctx, s.db.Q(ctx), caller.UserID, store.NoLock)
}

// UpdateMe changes the caller's own display name.
func (s *Service) UpdateMe(ctx context.Context, name *string) (User, error) {
	caller, err := Authorize(ctx, ReadProfile)
	if err != nil {
		return User{}, err
	}
	if caller.Kind == KindJWT {
		return User{}, errs.Forbidden("CALLER_KIND_NOT_ALLOWED", "service accounts have no user profile")
	}
	return s.updateUser(ctx, caller, caller.UserID, UserPatch{Name: name})
}

func userSnapshot(u User) map[string]any {
	return map[string]any{"email": u.Email, "name": u.Name, "role": string(u.Role), "metadata": map[string]any(u.Metadata)}
}

// UserRole returns the role of a user of the caller's organization. It is
// for other domain services that act on a user's behalf (embed sessions)
// and checks no permission of its own.
func (s *Service) UserRole(ctx context.Context, id string) (Role, error) {
	u, err := s.LookupUser(ctx, id)
	return u.Role, err
}

// LookupUser returns a user of the organization ctx is scoped to. It is
// for the packages that act before or on behalf of a user (sign-in,
// consent, userinfo claims) and checks no permission of its own; a
// malformed or unknown id is an errs error.
func (s *Service) LookupUser(ctx context.Context, id string) (User, error) {
	return s.loadUser(ctx, s.db.Q(ctx), id, store.NoLock)
}

// QueueUserExists adds to b the check whether id names a user of the
// organization b is sent for (store.DB.SendBatch), which sets *known, so a
// caller checks with its other reads in one round trip. It checks no
// permission of its own.
func QueueUserExists(b *pgx.Batch, id string, known *bool) {
	b.Queue(`SELECT EXISTS (SELECT 1 FROM users WHERE org_id = app_org_id() AND id = $1)`, id).
		QueryRow(func(row pgx.Row) error { return row.Scan(known) })
}
