package tenancy

import (
	"context"

	"github.com/assessd/assessd/internal/audit"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
)

// AuditLogs returns one page of the organization's audit log, newest first.
func (s *Service) AuditLogs(ctx context.Context, f audit.Filter, p paging.Page) ([]audit.Entry, string, error) {
	if _, err := Authorize(ctx, ReadAuditLog); err != nil {
		return nil, "", err
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return nil, "", errs.Invalid("until", "must be after since")
	}
	return audit.List(ctx, s.db.Q(ctx), f, p)
}

// AppendAppEntry writes an entry supplied by an OAuth app. The entry is
// attributed to the token's own actor (the user, through the app's client)
// and marked app-originated, whatever the body claims.
func (s *Service) AppendAppEntry(ctx context.Context, e audit.Entry) (audit.Entry, error) {
	caller, err := Authorize(ctx, WriteAuditLog)
	if err != nil {
		return audit.Entry{}, err
	}
	if err := e.Validate(); err != nil {
		return audit.Entry{}, err
	}
	e.Actor = ActorOf(caller)
	e.Origin = audit.OriginApp
	return audit.Append(ctx, s.db.Q(ctx), e)
}

// RecordAction writes a platform entry for an action the caller in ctx
// performed outside the database (an embed session lives in Redis), so
// the organization's timeline still shows it.
func (s *Service) RecordAction(ctx context.Context, action string, target audit.Target, after map[string]any) error {
	caller, ok := CallerFrom(ctx)
	if !ok {
		return errs.Unauthenticated("authentication required")
	}
	err := audit.Record(ctx, s.db, audit.Entry{Action: action, Actor: ActorOf(caller), Target: target, After: after})
	return err
}
