package webhooks

import (
	"context"
	"time"
)

// Retention is how long events and their delivery attempts are kept: the
// delivery log the API shows and redelivery needs (decision 0153).
const Retention = 30 * 24 * time.Hour

// SweepEvents deletes the events recorded more than Retention before now,
// with their targets and deliveries, but those still being delivered.
// App.Start runs it periodically, off the request path.
func (s *Service) SweepEvents(ctx context.Context, now time.Time) error {
	_, err := s.db.SweepBefore(ctx, "sweep_webhook_events", now.Add(-Retention))
	return err
}
