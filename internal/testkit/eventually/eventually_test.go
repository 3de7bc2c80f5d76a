package eventually_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/testkit/eventually"
)

func TestSucceedsWaitsForTheCondition(t *testing.T) {
	var calls atomic.Int32
	eventually.Succeeds(t, 5*time.Second, func() error {
		if calls.Add(1) < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if n := calls.Load(); n != 3 {
		t.Fatalf("check called %d times, want 3", n)
	}
}

func TestSucceedsFailsAfterTheDeadline(t *testing.T) {
	ft := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		eventually.Succeeds(ft, 50*time.Millisecond, func() error { return errors.New("never") })
	}()
	<-done
	if ft.msg != "not within 50ms: never" {
		t.Fatalf("failure message %q", ft.msg)
	}
}

// fatalRecorder records Fatalf and ends the goroutine, as testing.T does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
