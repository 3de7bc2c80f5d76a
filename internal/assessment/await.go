package assessment

import (
	"context"
	"log/slog"
	"time"

	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/store"
)

// MaxResultWait bounds how long a read of a result may wait for its
// grading to finish: well inside the server's 60 s write timeout, and the
// usual bound of long polls (decision 0135).
const MaxResultWait = 30 * time.Second

// finishedChannel is notified, with the result's id, whenever a result
// leaves grading (migration 017).
const finishedChannel = "assessd_results"

// pollWhileOffline is how often a waiting read looks again while this
// instance hears no notifications.
const pollWhileOffline = time.Second

// AwaitResult is Result, except that a result still grading is read again
// once it is finished, or when wait has passed, whichever comes first. A
// wait of 0 does not wait; one above MaxResultWait is refused.
func (s *Service) AwaitResult(ctx context.Context, examID, id string, wait time.Duration) (Result, error) {
	if wait < 0 || wait > MaxResultWait {
		return Result{}, errs.Invalid("wait", "must be from 0s to %s", MaxResultWait)
	}
	if wait == 0 {
		return s.Result(ctx, examID, id)
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		// Registered before the read: a finish between the read and the
		// wait still wakes it.
		woken, release, ok := s.finished.Wait(id)
		r, err := s.Result(ctx, examID, id)
		if err != nil || r.Status != StatusGrading || !ok {
			release()
			return r, err
		}
		var poll <-chan time.Time
		if !s.finished.Online() {
			poll = time.After(pollWhileOffline)
		}
		select {
		case <-woken:
		case <-poll:
		case <-deadline.C:
			release()
			return r, nil
		case <-ctx.Done():
			release()
			return Result{}, ctx.Err()
		}
		release()
	}
}

// WatchFinishedResults wakes the reads waiting for a result as it is
// finished, on any instance, until ctx ends; then it ends every wait. It
// listens on the database's direct (unpooled) URL and reconnects after
// failures; meanwhile waiting reads poll.
func (s *Service) WatchFinishedResults(ctx context.Context) {
	s.db.Subscribe(ctx, store.Subscription{
		Channel: finishedChannel,
		Up:      func() { s.finished.SetOnline(true) },
		Notify:  s.finished.Wake,
		Down: func(err error) {
			s.finished.SetOnline(false)
			slog.WarnContext(ctx, "finished-result listener disconnected; waiting reads poll, retrying", "err", err)
		},
	})
	s.finished.Close()
}
