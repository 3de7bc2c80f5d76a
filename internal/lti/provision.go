package lti

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/mail"
	"strings"
	"unicode/utf8"

	"github.com/assessd/assessd/internal/classes"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// PlatformCaller is who a launch's changes are made by: its platform,
// acting in its organization with scopes, which the audit log shows as
// the system actor named by the registration's id. Matching users and
// contexts takes the users and classes scopes; what the launch opens,
// others.
func PlatformCaller(orgID, platformID string, scopes ...tenancy.Scope) *tenancy.Caller {
	return &tenancy.Caller{Kind: tenancy.KindSystem, OrgID: orgID, UserID: platformID, Role: tenancy.RoleOwner, Scopes: scopes}
}

// provisioning are the scopes of matching a launch's user and context.
var provisioning = []tenancy.Scope{tenancy.ScopeUsersRead, tenancy.ScopeUsersWrite, tenancy.ScopeClassesRead, tenancy.ScopeClassesWrite}

// match is what the organization already holds of a launch: its user and
// their role, its context's class and the user's role in it; "" for what
// does not exist yet.
type match struct {
	userID     string
	userRole   tenancy.Role
	classID    string
	memberRole classes.Role
}

// matchSQL reads a launch's match in one statement.
const matchSQL = `
	SELECT coalesce(lu.user_id, ''), coalesce(u.role, ''), coalesce(lc.class_id, ''), coalesce(m.role, '')
	  FROM (SELECT 1) one
	  LEFT JOIN lti_users lu ON lu.org_id = app_org_id() AND lu.issuer = $1 AND lu.subject = $2
	  LEFT JOIN users u ON u.org_id = app_org_id() AND u.id = lu.user_id
	  LEFT JOIN lti_contexts lc ON lc.org_id = app_org_id() AND lc.issuer = $1 AND lc.deployment_id = $3 AND lc.context_id = $4
	  LEFT JOIN class_members m ON m.org_id = app_org_id() AND m.class_id = lc.class_id AND m.user_id = lu.user_id`

func (s *Service) match(ctx context.Context, q store.Querier, p Platform, c claims) (match, error) {
	var m match
	contextID := ""
	if c.Context != nil {
		contextID = c.Context.ID
	}
	err := q.QueryRow(ctx, matchSQL, p.Issuer, c.Subject, c.DeploymentID, contextID).Scan(&m.userID, &m.userRole, &m.classID, &m.memberRole)
	if err != nil {
		return m, fmt.Errorf("lti: match the launch: %w", err)
	}
	return m, nil
}

// classRole is the part in a class of a user launched in role.
func classRole(role tenancy.Role) classes.Role {
	if role == tenancy.RoleTeacher {
		return classes.RoleTeacher
	}
	return classes.RoleStudent
}

// provision returns the user and class of a launch acting in role,
// creating what is missing (decision 0200): the user on their first
// launch, with the role; the class of a context on its first launch; the
// user on its roster. A returning student launched as an instructor
// becomes a teacher; staff are never made students, and their learner
// launches are refused, since a student's page is taken by students.
// What exists already costs one read.
func (s *Service) provision(ctx context.Context, p Platform, c claims, role tenancy.Role) (userID, classID string, err error) {
	m, err := s.match(ctx, s.db.Q(ctx), p, c)
	if err != nil {
		return "", "", err
	}
	if done, err := settled(m, c, role); done || err != nil {
		return m.userID, m.classID, err
	}
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		// First launches of one user, or of one context, serialize here.
		if _, err := q.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, "lti_user:"+p.Issuer+"\n"+c.Subject); err != nil {
			return fmt.Errorf("lti: lock the launch's user: %w", err)
		}
		if c.Context != nil {
			if _, err := q.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`,
				"lti_context:"+p.Issuer+"\n"+c.DeploymentID+"\n"+c.Context.ID); err != nil {
				return fmt.Errorf("lti: lock the launch's context: %w", err)
			}
		}
		if m, err = s.match(ctx, q, p, c); err != nil {
			return err
		}
		if done, err := settled(m, c, role); done || err != nil {
			return err
		}
		if m.userID, err = s.userOf(ctx, q, p, c, m, role); err != nil {
			return err
		}
		if c.Context == nil {
			return nil
		}
		if m.classID == "" {
			if m.classID, err = s.classOf(ctx, q, p, c); err != nil {
				return err
			}
		}
		if m.memberRole != classRole(role) {
			_, err = s.classes.AddMember(ctx, m.classID, classes.NewMember{UserID: m.userID, Role: classRole(role)})
		}
		return err
	})
	return m.userID, m.classID, err
}

// settled reports whether match m already holds everything a launch in
// role needs, or refuses the launch.
func settled(m match, c claims, role tenancy.Role) (bool, error) {
	if m.userID == "" {
		return false, nil
	}
	if role == tenancy.RoleStudent && m.userRole != tenancy.RoleStudent {
		return false, refused(errs.KindForbidden, "LEARNER_IS_STAFF",
			"assessd knows this account as staff, and an exam is taken by a student: launch with a learner's account.")
	}
	if role == tenancy.RoleTeacher && m.userRole == tenancy.RoleStudent {
		return false, nil
	}
	return c.Context == nil || (m.classID != "" && m.memberRole == classRole(role)), nil
}

// userOf returns the user of a launch, creating them on the first launch
// and making a student launched as an instructor a teacher.
func (s *Service) userOf(ctx context.Context, q store.Querier, p Platform, c claims, m match, role tenancy.Role) (string, error) {
	if m.userID != "" {
		if role == tenancy.RoleTeacher && m.userRole == tenancy.RoleStudent {
			if _, err := s.users.UpdateUser(ctx, m.userID, tenancy.UserPatch{Role: &role}); err != nil {
				return "", err
			}
		}
		return m.userID, nil
	}
	email, err := s.emailOf(ctx, p, c)
	if err != nil {
		return "", err
	}
	u, err := s.users.CreateUser(ctx, tenancy.NewUser{Email: email, Name: nameOf(c, role), Role: role})
	if err != nil {
		return "", err
	}
	if _, err := q.Exec(ctx, `INSERT INTO lti_users (org_id, issuer, subject, user_id) VALUES (app_org_id(), $1, $2, $3)`,
		p.Issuer, c.Subject, u.ID); err != nil {
		return "", fmt.Errorf("lti: map the launch's user: %w", err)
	}
	return u.ID, nil
}

// emailOf is the email address of a launch's new user: the one the
// platform shared when it is a plain address no user of the organization
// has, else an address of the reserved .invalid domain (RFC 2606) made
// from the issuer and subject, which reaches no one: a platform's word is
// no proof of an address, so a launch never takes over an existing user
// by email.
func (s *Service) emailOf(ctx context.Context, p Platform, c claims) (string, error) {
	if a, err := mail.ParseAddress(c.Email); err == nil && a.Address == c.Email && len(c.Email) <= 254 {
		taken, _, err := s.users.ListUsers(ctx, tenancy.UserFilter{Email: c.Email}, paging.Page{Size: 1})
		if err != nil {
			return "", err
		}
		if len(taken) == 0 {
			return c.Email, nil
		}
	}
	sum := sha256.Sum256([]byte(p.Issuer + "\n" + c.Subject))
	return "lti-" + hex.EncodeToString(sum[:10]) + "@lti.invalid", nil
}

// maxUserName bounds a launched user's name, as tenancy does.
const maxUserName = 200

// nameOf is a new user's name: the platform's, else its given and family
// names, else the role's word.
func nameOf(c claims, role tenancy.Role) string {
	name := strings.TrimSpace(c.Name)
	if name == "" {
		name = strings.TrimSpace(c.GivenName + " " + c.FamilyName)
	}
	if name == "" {
		name = "Learner"
		if role == tenancy.RoleTeacher {
			name = "Instructor"
		}
	}
	return truncate(name, maxUserName)
}

// truncate cuts s to at most n characters.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return strings.TrimSpace(string([]rune(s)[:n]))
}

// classOf creates the class of a launch's context, named after the
// course, and maps the context to it.
func (s *Service) classOf(ctx context.Context, q store.Querier, p Platform, c claims) (string, error) {
	name := strings.TrimSpace(c.Context.Title)
	if name == "" {
		name = strings.TrimSpace(c.Context.Label)
	}
	if name == "" {
		name = "Course " + c.Context.ID
	}
	class, err := s.classes.Create(ctx, classes.NewClass{Name: truncate(name, 200)})
	if err != nil {
		return "", err
	}
	_, err = q.Exec(ctx, `INSERT INTO lti_contexts (org_id, issuer, deployment_id, context_id, class_id) VALUES (app_org_id(), $1, $2, $3, $4)`,
		p.Issuer, c.DeploymentID, c.Context.ID, class.ID)
	if err != nil {
		return "", fmt.Errorf("lti: map the launch's context: %w", err)
	}
	return class.ID, nil
}
