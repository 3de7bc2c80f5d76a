package failurelog_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/platform/failurelog"
)

// records keeps what was logged, as level and message.
type records struct {
	mu    sync.Mutex
	lines []string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, rec.Level.String()+" "+rec.Message)
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

func TestAnOutageIsLoggedOnceWithRemindersAndItsEnd(t *testing.T) {
	rec := &records{}
	prev := slog.Default()
	slog.SetDefault(slog.New(rec))
	t.Cleanup(func() { slog.SetDefault(prev) })

	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	l := &failurelog.Log{What: "outbox claim", Level: slog.LevelError, Now: func() time.Time { return now }}
	ctx, down := context.Background(), errors.New("connection refused")
	l.Record(ctx, nil)
	// Failures every two seconds for two minutes: the first, and one
	// reminder a minute.
	for range 61 {
		l.Record(ctx, down)
		now = now.Add(2 * time.Second)
	}
	l.Record(ctx, nil)
	l.Record(ctx, nil)
	l.Record(ctx, down)

	want := []string{
		"ERROR outbox claim failed",
		"ERROR outbox claim still failing",
		"ERROR outbox claim still failing",
		"INFO outbox claim recovered",
		"ERROR outbox claim failed",
	}
	if len(rec.lines) != len(want) {
		t.Fatalf("logged %d lines %q, want %q", len(rec.lines), rec.lines, want)
	}
	for i := range want {
		if rec.lines[i] != want[i] {
			t.Errorf("line %d = %q, want %q", i, rec.lines[i], want[i])
		}
	}
}
