// Package failurelog logs the failures of work repeated on a timer (an
// outbox dispatcher's claims, housekeeping) without repeating itself: while
// the database is away every attempt fails the same way, and a line per
// attempt would bury everything else in the log.
package failurelog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultRemind is how often a failure that goes on is logged again.
const DefaultRemind = time.Minute

// Log follows one repeated operation. The first failure after a success is
// logged at once, at Level; while the operation keeps failing, one line per
// Remind says for how long and how many times; the first success after
// failures is logged at INFO. The zero Log logs at ERROR every minute.
type Log struct {
	// What names the operation in the messages ("outbox claim").
	What  string
	Level slog.Level
	// Remind is the interval of the reminders (DefaultRemind when zero).
	Remind time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu       sync.Mutex
	failures int
	since    time.Time
	reminded time.Time
}

// New returns the Log of the operation what, logging failures at level.
func New(what string, level slog.Level) *Log { return &Log{What: what, Level: level} }

// Record records the outcome of one attempt; attrs are added to a logged
// failure.
func (l *Log) Record(ctx context.Context, err error, attrs ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if err == nil {
		if l.failures > 0 {
			slog.InfoContext(ctx, l.What+" recovered", "failures", l.failures, "after", now.Sub(l.since).Round(time.Millisecond).String())
			l.failures = 0
		}
		return
	}
	l.failures++
	switch {
	case l.failures == 1:
		l.since, l.reminded = now, now
		slog.Log(ctx, l.Level, l.What+" failed", append(attrs, "err", err)...)
	case now.Sub(l.reminded) >= l.remind():
		l.reminded = now
		slog.Log(ctx, l.Level, l.What+" still failing", append(attrs, "failures", l.failures,
			"for", now.Sub(l.since).Round(time.Second).String(), "err", err)...)
	}
}

func (l *Log) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Log) remind() time.Duration {
	if l.Remind > 0 {
		return l.Remind
	}
	return DefaultRemind
}
