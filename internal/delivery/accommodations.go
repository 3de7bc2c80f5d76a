package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/platform/paging"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// Bounds of an accommodation.
const (
	MaxExtraTimePercent = 1000
	MaxExtraMinutes     = 7 * 24 * 60
)

// SetAccommodation sets one student's overrides of an assignment,
// replacing earlier ones. The student's running attempt is extended when
// the new terms give it more time.
func (s *Service) SetAccommodation(ctx context.Context, in Accommodation) (Accommodation, error) {
	caller, err := tenancy.Authorize(ctx, WriteAssignments)
	if err != nil {
		return Accommodation{}, err
	}
	switch {
	case !ids.Valid(ids.User, in.UserID):
		return Accommodation{}, errs.Invalid("userId", "must be a user id (usr_...)")
	case in.ExtraTimePercent < 0 || in.ExtraTimePercent > MaxExtraTimePercent:
		return Accommodation{}, errs.Invalid("extraTimePercent", "must be between 0 and %d", MaxExtraTimePercent)
	case in.ExtraMinutes < 0 || in.ExtraMinutes > MaxExtraMinutes:
		return Accommodation{}, errs.Invalid("extraMinutes", "must be between 0 and %d", MaxExtraMinutes)
	case in.MaxAttempts < 0 || in.MaxAttempts > MaxAttempts:
		return Accommodation{}, errs.Invalid("maxAttempts", "must be between 1 and %d", MaxAttempts)
	}
	err = s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		a, err := s.loadAssignment(ctx, q, in.AssignmentID, "", store.ForKeyShare)
		if err != nil {
			return err
		}
		if !in.ClosesAt.IsZero() && !in.ClosesAt.After(a.OpensAt) {
			return errs.Invalid("closesAt", "must be after the assignment's opensAt")
		}
		var closes *time.Time
		if !in.ClosesAt.IsZero() {
			closes = &in.ClosesAt
		}
		var attempts *int
		if in.MaxAttempts > 0 {
			attempts = &in.MaxAttempts
		}
		err = q.QueryRow(ctx, `
			INSERT INTO accommodations (assignment_id, user_id, org_id, extra_time_percent, extra_minutes, closes_at, max_attempts)
			SELECT $1, u.id, app_org_id(), $3, $4, $5, $6 FROM users u WHERE u.org_id = app_org_id() AND u.id = $2
			ON CONFLICT (assignment_id, user_id) DO UPDATE
			   SET extra_time_percent = excluded.extra_time_percent, extra_minutes = excluded.extra_minutes,
			       closes_at = excluded.closes_at, max_attempts = excluded.max_attempts, updated_at = now()
			RETURNING updated_at`,
			a.ID, in.UserID, in.ExtraTimePercent, in.ExtraMinutes, closes, attempts).Scan(&in.UpdatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.NotFound("user")
		}
		if err != nil {
			return err
		}
		if err := s.extendRunning(ctx, q, a.ID, in.UserID); err != nil {
			return err
		}
		return audit.Record(ctx, s.db, audit.Entry{Action: "assignment.accommodation_set", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "assignment", ID: a.ID}, After: map[string]any{"userId": in.UserID,
				"extraTimePercent": in.ExtraTimePercent, "extraMinutes": in.ExtraMinutes, "closesAt": closes, "maxAttempts": attempts}})
	})
	if store.ForeignKey(err) == "accommodations_user_id_fkey" {
		return Accommodation{}, errs.NotFound("user") // deleted meanwhile
	}
	if err != nil {
		return Accommodation{}, fmt.Errorf("set accommodation: %w", err)
	}
	return in, nil
}

func scanAccommodation(row pgx.Row) (Accommodation, error) {
	var c Accommodation
	var closes *time.Time
	var attempts *int
	err := row.Scan(&c.AssignmentID, &c.UserID, &c.ExtraTimePercent, &c.ExtraMinutes, &closes, &attempts, &c.UpdatedAt)
	if closes != nil {
		c.ClosesAt = *closes
	}
	if attempts != nil {
		c.MaxAttempts = *attempts
	}
	return c, err
}

// Accommodations lists an assignment's accommodations by student.
func (s *Service) Accommodations(ctx context.Context, assignmentID string, p paging.Page) ([]Accommodation, string, error) {
	if _, err := tenancy.Authorize(ctx, ReadAccommodations); err != nil {
		return nil, "", err
	}
	q := s.db.Q(ctx)
	if _, err := s.loadAssignment(ctx, q, assignmentID, "", store.NoLock); err != nil {
		return nil, "", err
	}
	out, next, err := store.ListPage(ctx, q, p, scanAccommodation, func(c Accommodation) string { return c.UserID }, `
		SELECT assignment_id, user_id, extra_time_percent, extra_minutes, closes_at, max_attempts, updated_at
		  FROM accommodations WHERE org_id = app_org_id() AND assignment_id = $1 AND user_id > $2
		 ORDER BY user_id LIMIT $3`, assignmentID, p.After, p.Limit())
	if err != nil {
		return nil, "", fmt.Errorf("list accommodations: %w", err)
	}
	return out, next, nil
}

// DeleteAccommodation removes one student's overrides. A running attempt
// keeps the deadline it has.
func (s *Service) DeleteAccommodation(ctx context.Context, assignmentID, userID string) error {
	caller, err := tenancy.Authorize(ctx, WriteAssignments)
	if err != nil {
		return err
	}
	if !ids.Valid(ids.User, userID) {
		return errs.Invalid("userId", "must be a user id (usr_...)")
	}
	return s.db.Tx(ctx, func(ctx context.Context) error {
		q := s.db.Q(ctx)
		if _, err := s.loadAssignment(ctx, q, assignmentID, "", store.NoLock); err != nil {
			return err
		}
		tag, err := q.Exec(ctx, `DELETE FROM accommodations WHERE org_id = app_org_id() AND assignment_id = $1 AND user_id = $2`,
			assignmentID, userID)
		if err != nil {
			return fmt.Errorf("delete accommodation: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return errs.NotFound("accommodation")
		}
		return audit.Record(ctx, s.db, audit.Entry{Action: "assignment.accommodation_removed", Actor: tenancy.ActorOf(caller),
			Target: audit.Target{Type: "assignment", ID: assignmentID}, Before: map[string]any{"userId": userID}})
	})
}
