package classes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// Member is a user on a class's roster.
type Member struct {
	UserID string
	Name   string
	Email  string
	Role   Role
	// AddedAt is when the user joined the class; a change of role keeps
	// it.
	AddedAt time.Time
}

// NewMember is the input of AddMember.
type NewMember struct {
	UserID string
	Role   Role
}

// MemberFilter narrows Members.
type MemberFilter struct {
	// Role selects the class's students or its teachers.
	Role Role
}

func (r Role) valid() bool { return r == RoleStudent || r == RoleTeacher }

const memberColumns = `m.user_id, u.name, u.email, m.role, m.added_at`

func scanMember(row pgx.Row) (Member, error) {
	var m Member
	err := row.Scan(&m.UserID, &m.Name, &m.Email, &m.Role, &m.AddedAt)
	return m, err
}

// Members returns one page of the roster of a class the caller may see,
// ordered by user id.
func (s *Service) Members(ctx context.Context, classID string, f MemberFilter, p paging.Page) ([]Member, string, error) {
	caller, err := tenancy.Authorize(ctx, ReadClasses)
	if err != nil {
		return nil, "", err
	}
	if f.Role != "" && !f.Role.valid() {
		return nil, "", errs.Invalid("role", "must be student or teacher")
	}
	q := s.db.Q(ctx)
	if _, err := s.load(ctx, q, caller, classID, store.NoLock); err != nil {
		return nil, "", err
	}
	list, next, err := store.ListPage(ctx, q, p, scanMember, func(m Member) string { return m.UserID }, `
		SELECT `+memberColumns+` FROM class_members m JOIN users u ON u.org_id = m.org_id AND u.id = m.user_id
		 WHERE m.org_id = app_org_id() AND m.class_id = $1 AND ($2 = '' OR m.role = $2) AND m.user_id > $3
		 ORDER BY m.user_id LIMIT $4`, classID, string(f.Role), p.After, p.Limit())
	if err != nil {
		return nil, "", fmt.Errorf("list class members: %w", err)
	}
	return list, next, nil
}

// AddMember puts a user of the organization on the roster of a class the
// caller may see, or gives a member the role in.Role: adding a member
// again is no conflict. A user whose role is student can be the class's
// student only; staff can be either. A class holds at most MaxMembers
// members. Audited as class.member_added, with the former role as before
// when it changed; adding a member with the role they have changes
// nothing and records nothing.
func (s *Service) AddMember(ctx context.Context, classID string, in NewMember) (Member, error) {
	caller, err := tenancy.Authorize(ctx, WriteClasses)
	if err != nil {
		return Member{}, err
	}
	if !ids.Valid(ids.User, in.UserID) {
		return Member{}, errs.Invalid("userId", "must be a user id (usr_...)")
	}
	if !in.Role.valid() {
		return Member{}, errs.Invalid("role", "must be student or teacher")
	}
	var m Member
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		if _, err := s.load(ctx, q, caller, classID, store.ForKeyShare); err != nil {
			return err
		}
		var userRole tenancy.Role
		err := q.QueryRow(ctx, `SELECT name, email, role FROM users WHERE org_id = app_org_id() AND id = $1`+string(store.ForKeyShare),
			in.UserID).Scan(&m.Name, &m.Email, &userRole)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.NotFound("user")
		}
		if err != nil {
			return fmt.Errorf("load class member's user: %w", err)
		}
		if userRole == tenancy.RoleStudent && in.Role != RoleStudent {
			return errs.Invalid("role", "must be student: the user's role in the organization is student")
		}
		before, err := s.room(ctx, q, classID, in.UserID)
		if err != nil {
			return err
		}
		m.UserID, m.Role = in.UserID, in.Role
		if before == in.Role {
			return q.QueryRow(ctx, `SELECT added_at FROM class_members WHERE org_id = app_org_id() AND class_id = $1 AND user_id = $2`,
				classID, in.UserID).Scan(&m.AddedAt)
		}
		if err := q.QueryRow(ctx, `
			INSERT INTO class_members (class_id, user_id, org_id, role) VALUES ($1, $2, app_org_id(), $3)
			ON CONFLICT (class_id, user_id) DO UPDATE SET role = excluded.role
			RETURNING added_at`, classID, in.UserID, in.Role).Scan(&m.AddedAt); err != nil {
			return fmt.Errorf("add class member: %w", err)
		}
		var was map[string]any
		if before != "" {
			was = map[string]any{"userId": in.UserID, "role": before}
		}
		return s.audit(ctx, caller, "class.member_added", classID, was, map[string]any{"userId": in.UserID, "role": in.Role})
	})
	return m, err
}

// room returns the role userID has in class classID ("" when the user is
// no member yet) and refuses a new member beyond MaxMembers. Additions to
// a class serialize on its lock, so concurrent ones cannot pass the bound
// together.
func (s *Service) room(ctx context.Context, q store.Querier, classID, userID string) (Role, error) {
	n, err := s.db.CountLocked(ctx, "class_members:"+classID,
		`SELECT count(*) FROM class_members WHERE org_id = app_org_id() AND class_id = $1`, classID)
	if err != nil {
		return "", err
	}
	var role Role
	err = q.QueryRow(ctx, `SELECT role FROM class_members WHERE org_id = app_org_id() AND class_id = $1 AND user_id = $2`,
		classID, userID).Scan(&role)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if n >= MaxMembers {
			return "", errs.Conflict("CLASS_FULL", "a class has at most %d members; remove one to add another", MaxMembers)
		}
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read class member: %w", err)
	}
	return role, nil
}

// RemoveMember takes a user off the roster of a class the caller may see.
// A teacher who removes themselves no longer sees the class. Audited as
// class.member_removed.
func (s *Service) RemoveMember(ctx context.Context, classID, userID string) error {
	caller, err := tenancy.Authorize(ctx, WriteClasses)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		if _, err := s.load(ctx, q, caller, classID, store.NoLock); err != nil {
			return err
		}
		if !ids.Valid(ids.User, userID) {
			return errs.NotFound("class member")
		}
		var role Role
		err := q.QueryRow(ctx, `DELETE FROM class_members WHERE org_id = app_org_id() AND class_id = $1 AND user_id = $2 RETURNING role`,
			classID, userID).Scan(&role)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.NotFound("class member")
		}
		if err != nil {
			return fmt.Errorf("remove class member: %w", err)
		}
		return s.audit(ctx, caller, "class.member_removed", classID, map[string]any{"userId": userID, "role": role}, nil)
	})
}
