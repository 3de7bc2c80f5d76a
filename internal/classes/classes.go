// Package classes owns an organization's classes: named rosters of its
// users, each a student or a teacher of the class. Owners and admins see
// and manage every class; a teacher sees and manages only the classes they
// are a teacher of, and any other class is not found to them (decision
// 0191). Assignments give exams to classes (issue 55); IsTeacherOf is how
// they ask whether the caller teaches one.
package classes

import (
	"context"
	"errors"
	"fmt"
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

// The permissions of this package. Students hold neither scope: a roster
// is staff's business, and a student learns of a class through the
// assignments given to it.
var (
	ReadClasses  = tenancy.Permission{Scope: tenancy.ScopeClassesRead, Roles: tenancy.StaffRoles}
	WriteClasses = tenancy.Permission{Scope: tenancy.ScopeClassesWrite, Roles: tenancy.StaffRoles}
)

// Bounds of decision 0191: a class is a section or a course, not a whole
// school, and an organization's classes are listed and synced by hosts.
const (
	// MaxMembers bounds a class's members, students and teachers.
	MaxMembers = 5000
	// MaxClasses bounds an organization's classes.
	MaxClasses = 10000
	// maxName bounds a class's name and externalId, in characters.
	maxName = 200
)

// Role is a member's part in a class.
type Role string

// The roles of a class member.
const (
	RoleStudent Role = "student"
	RoleTeacher Role = "teacher"
)

// Class is a roster of an organization's users.
type Class struct {
	ID   string
	Name string
	// ExternalID is the host's own key for the class (a SIS section, an
	// LMS course), unique in the organization; "" when it has none.
	ExternalID string
	// MemberCount counts the class's students and teachers.
	MemberCount int
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// NewClass is the input of Create.
type NewClass struct {
	Name       string
	ExternalID string
}

// Patch changes the fields that are set; an ExternalID of "" removes it.
type Patch struct {
	Name       *string
	ExternalID *string
}

// Filter narrows List.
type Filter struct {
	// ExternalID selects the class with this external id.
	ExternalID string
}

// Service is the classes API on PostgreSQL.
type Service struct {
	db *store.DB
}

// NewService returns the classes API on db.
func NewService(db *store.DB) *Service { return &Service{db: db} }

const classColumns = `c.id, c.name, coalesce(c.external_id, ''),
	(SELECT count(*) FROM class_members m WHERE m.org_id = app_org_id() AND m.class_id = c.id),
	c.created_at, c.updated_at`

func scanClass(row pgx.Row) (Class, error) {
	var c Class
	err := row.Scan(&c.ID, &c.Name, &c.ExternalID, &c.MemberCount, &c.CreatedAt, &c.UpdatedAt)
	return c, err
}

// taughtBy is the condition that class c is visible to the caller whose
// teacherScope is in parameter p: every class for "" (owners, admins),
// otherwise those the user teaches.
func taughtBy(p string) string {
	return `(` + p + ` = '' OR EXISTS (SELECT 1 FROM class_members t
		WHERE t.org_id = app_org_id() AND t.class_id = c.id AND t.user_id = ` + p + ` AND t.role = 'teacher'))`
}

// teacherScope is the user whose classes alone caller may see: the
// caller's own user for a teacher, "" (every class) for owners and
// admins.
func teacherScope(caller *tenancy.Caller) string {
	if caller.Role == tenancy.RoleTeacher {
		return caller.UserID
	}
	return ""
}

func snapshot(c Class) map[string]any {
	return map[string]any{"name": c.Name, "externalId": c.ExternalID}
}

// validName trims a class's name and checks it is present and at most
// maxName characters.
func validName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", errs.Invalid("name", "is required")
	}
	if utf8.RuneCountInString(name) > maxName {
		return "", errs.Invalid("name", "must be at most %d characters", maxName)
	}
	return name, nil
}

// validExternalID checks a host's key as it is, untrimmed: a key that
// differs by white space from the host's record would never be found by
// it.
func validExternalID(id string) error {
	if utf8.RuneCountInString(id) > maxName {
		return errs.Invalid("externalId", "must be at most %d characters", maxName)
	}
	if strings.TrimFunc(id, unicode.IsSpace) != id {
		return errs.Invalid("externalId", "must not begin or end with white space")
	}
	return nil
}

// externalIDTaken is the answer to a write that met the organization's
// unique index on external ids.
func externalIDTaken(err error) error {
	if errors.Is(err, store.ErrUniqueViolation) {
		return errs.Conflict("EXTERNAL_ID_TAKEN", "another class of the organization has this externalId")
	}
	return err
}

// List returns one page of the classes the caller may see, oldest first.
func (s *Service) List(ctx context.Context, f Filter, p paging.Page) ([]Class, string, error) {
	caller, err := tenancy.Authorize(ctx, ReadClasses)
	if err != nil {
		return nil, "", err
	}
	list, next, err := store.ListPage(ctx, s.db.Q(ctx), p, scanClass, func(c Class) string { return c.ID }, `
		SELECT `+classColumns+` FROM classes c
		 WHERE c.org_id = app_org_id() AND `+taughtBy("$1")+`
		   AND ($2 = '' OR c.external_id = $2)
		   AND c.id > $3
		 ORDER BY c.id LIMIT $4`, teacherScope(caller), f.ExternalID, p.After, p.Limit())
	if err != nil {
		return nil, "", fmt.Errorf("list classes: %w", err)
	}
	return list, next, nil
}

// Get returns one class the caller may see.
func (s *Service) Get(ctx context.Context, id string) (Class, error) {
	caller, err := tenancy.Authorize(ctx, ReadClasses)
	if err != nil {
		return Class{}, err
	}
	return s.load(ctx, s.db.Q(ctx), caller, id, store.NoLock)
}

// load reads class id if caller may see it, taking lock on its row.
func (s *Service) load(ctx context.Context, q store.Querier, caller *tenancy.Caller, id string, lock store.RowLock) (Class, error) {
	if !ids.Valid(ids.Class, id) {
		return Class{}, errs.NotFound("class")
	}
	c, err := scanClass(q.QueryRow(ctx, `SELECT `+classColumns+` FROM classes c
		WHERE c.org_id = app_org_id() AND c.id = $1 AND `+taughtBy("$2")+string(lock), id, teacherScope(caller)))
	if errors.Is(err, pgx.ErrNoRows) {
		return Class{}, errs.NotFound("class")
	}
	if err != nil {
		return Class{}, fmt.Errorf("load class: %w", err)
	}
	return c, nil
}

// Create adds a class. A teacher who creates one becomes its teacher, so
// that they see it; a teacher that is no user (a service account) could
// never see it and may not create one. An organization holds at most
// MaxClasses classes. Audited as class.created.
func (s *Service) Create(ctx context.Context, in NewClass) (Class, error) {
	caller, err := tenancy.Authorize(ctx, WriteClasses)
	if err != nil {
		return Class{}, err
	}
	if caller.Role == tenancy.RoleTeacher && caller.Kind == tenancy.KindJWT {
		return Class{}, errs.Forbidden("ROLE_NOT_ALLOWED", "a teacher service account cannot teach classes; create them with an admin's credential")
	}
	name, err := validName(in.Name)
	if err != nil {
		return Class{}, err
	}
	if err := validExternalID(in.ExternalID); err != nil {
		return Class{}, err
	}
	var c Class
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		n, err := s.db.CountLocked(ctx, "classes:"+caller.OrgID, `SELECT count(*) FROM classes WHERE org_id = app_org_id()`)
		if err != nil {
			return err
		}
		if n >= MaxClasses {
			return errs.Conflict("CLASS_LIMIT", "an organization has at most %d classes; delete one to add another", MaxClasses)
		}
		c, err = scanClass(q.QueryRow(ctx, `
			INSERT INTO classes AS c (id, org_id, name, external_id, created_by)
			VALUES ($1, app_org_id(), $2, nullif($3, ''), $4) RETURNING `+classColumns,
			ids.New(ids.Class), name, in.ExternalID, caller.UserID))
		if err != nil {
			return fmt.Errorf("create class: %w", externalIDTaken(err))
		}
		if teacherScope(caller) != "" {
			if _, err := q.Exec(ctx, `INSERT INTO class_members (class_id, user_id, org_id, role) VALUES ($1, $2, app_org_id(), 'teacher')`,
				c.ID, caller.UserID); err != nil {
				return fmt.Errorf("add the class's teacher: %w", err)
			}
			c.MemberCount = 1
		}
		return s.audit(ctx, caller, "class.created", c.ID, nil, snapshot(c))
	})
	return c, err
}

// Update applies p to a class the caller may see. Audited as
// class.updated.
func (s *Service) Update(ctx context.Context, id string, p Patch) (Class, error) {
	caller, err := tenancy.Authorize(ctx, WriteClasses)
	if err != nil {
		return Class{}, err
	}
	var c Class
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		before, err := s.load(ctx, q, caller, id, store.ForNoKeyUpdate)
		if err != nil {
			return err
		}
		c = before
		if p.Name != nil {
			if c.Name, err = validName(*p.Name); err != nil {
				return err
			}
		}
		if p.ExternalID != nil {
			if err := validExternalID(*p.ExternalID); err != nil {
				return err
			}
			c.ExternalID = *p.ExternalID
		}
		c, err = scanClass(q.QueryRow(ctx, `
			UPDATE classes AS c SET name = $2, external_id = nullif($3, ''), updated_at = now()
			 WHERE c.org_id = app_org_id() AND c.id = $1 RETURNING `+classColumns, id, c.Name, c.ExternalID))
		if err != nil {
			return fmt.Errorf("update class: %w", externalIDTaken(err))
		}
		return s.audit(ctx, caller, "class.updated", id, snapshot(before), snapshot(c))
	})
	return c, err
}

// Delete removes a class the caller may see, and its roster. Audited as
// class.deleted.
func (s *Service) Delete(ctx context.Context, id string) error {
	caller, err := tenancy.Authorize(ctx, WriteClasses)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		before, err := s.load(ctx, q, caller, id, store.ForUpdate)
		if err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `DELETE FROM classes WHERE org_id = app_org_id() AND id = $1`, id); err != nil {
			return fmt.Errorf("delete class: %w", err)
		}
		return s.audit(ctx, caller, "class.deleted", id, snapshot(before), nil)
	})
}

// IsTeacherOf reports whether the caller teaches at least one of classIDs:
// a member of it as its teacher, and staff now. A user made a student
// after being made a class's teacher teaches nothing (decision 0191). It
// checks no permission: that is the calling operation's.
func (s *Service) IsTeacherOf(ctx context.Context, classIDs []string) (bool, error) {
	caller, ok := tenancy.CallerFrom(ctx)
	if !ok {
		return false, errs.Unauthenticated("authentication required")
	}
	if caller.Role == tenancy.RoleStudent || len(classIDs) == 0 {
		return false, nil
	}
	var teaches bool
	err := s.db.Q(ctx).QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM class_members
		 WHERE org_id = app_org_id() AND user_id = $1 AND class_id = ANY($2) AND role = 'teacher')`,
		caller.UserID, classIDs).Scan(&teaches)
	if err != nil {
		return false, fmt.Errorf("check class teacher: %w", err)
	}
	return teaches, nil
}

// audit records a change of class id inside ctx's transaction.
func (s *Service) audit(ctx context.Context, caller *tenancy.Caller, action, id string, before, after map[string]any) error {
	return audit.Record(ctx, s.db, audit.Entry{Action: action, Actor: tenancy.ActorOf(caller),
		Target: audit.Target{Type: "class", ID: id}, Before: before, After: after})
}
