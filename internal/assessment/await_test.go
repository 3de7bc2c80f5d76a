package assessment_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/testkit/eventually"
)

// awaited is what an AwaitResult call returned, and when.
type awaited struct {
	r     assessment.Result
	err   error
	after time.Duration
}

// await calls AwaitResult in the background.
func (f fixture) await(ctx context.Context, id string, wait time.Duration) <-chan awaited {
	done := make(chan awaited, 1)
	start := time.Now()
	go func() {
		r, err := f.content.AwaitResult(ctx, "", id, wait)
		done <- awaited{r, err, time.Since(start)}
	}()
	return done
}

// grade finishes r's essay answer with a score of 1.
func (f fixture) grade(t *testing.T, r assessment.Result) {
	t.Helper()
	if err := f.content.RecordGrade(f.staff, r.ID, f.qs[3].ID, 1, "Fine.", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.content.FinishResult(f.staff, r.ID, nil); err != nil {
		t.Fatal(err)
	}
}

// A read waiting for a result that is grading returns it once it is
// finished: told by the notification when the listener is up (a wait of
// 20 s ends at once), by polling every second when it is not.
func TestAwaitResultReturnsTheResultOnceFinished(t *testing.T) {
	for _, listening := range []bool{true, false} {
		name := map[bool]string{true: "notified", false: "polling"}[listening]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			if listening {
				ctx, stop := context.WithCancel(context.Background())
				t.Cleanup(stop)
				go f.content.WatchFinishedResults(ctx)
				eventually.Succeeds(t, 5*time.Second, func() error {
					if !assessment.FinishedListenerUp(f.content) {
						return errors.New("the finished-result listener is not up")
					}
					return nil
				})
			}
			r := f.submit(t, true)
			done := f.await(f.staff, r.ID, 20*time.Second)
			time.Sleep(100 * time.Millisecond)
			f.grade(t, r)
			select {
			case got := <-done:
				if got.err != nil || got.r.Status != assessment.StatusGraded || got.r.Score != 3 || len(got.r.Answers) != 4 {
					t.Fatalf("awaited %+v, %v", got.r, got.err)
				}
				if limit := map[bool]time.Duration{true: time.Second, false: 3 * time.Second}[listening]; got.after > limit {
					t.Errorf("returned after %s, want within %s of the finish", got.after, limit)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the wait did not end when the result was finished")
			}
		})
	}
}

// A wait ends with the result as it is when its time is up, when the
// service stops watching (shutdown), or at once for a finished result;
// waits outside 0-30 s are refused.
func TestAwaitResultBounds(t *testing.T) {
	f := newFixture(t)
	ctx, stop := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() { f.content.WatchFinishedResults(ctx); close(watched) }()
	eventually.Succeeds(t, 5*time.Second, func() error {
		if !assessment.FinishedListenerUp(f.content) {
			return errors.New("the finished-result listener is not up")
		}
		return nil
	})
	r := f.submit(t, true)

	got := <-f.await(f.staff, r.ID, 300*time.Millisecond)
	if got.err != nil || got.r.Status != assessment.StatusGrading || got.after < 300*time.Millisecond {
		t.Fatalf("a wait that ran out: %s, %v after %s", got.r.Status, got.err, got.after)
	}
	for _, wait := range []time.Duration{-time.Second, assessment.MaxResultWait + time.Millisecond} {
		if _, err := f.content.AwaitResult(f.staff, "", r.ID, wait); !errs.Is(err, errs.KindInvalid) {
			t.Errorf("a wait of %s: %v, want invalid", wait, err)
		}
	}

	done := f.await(f.staff, r.ID, 20*time.Second)
	time.Sleep(100 * time.Millisecond)
	stop()
	<-watched
	select {
	case got := <-done:
		if got.err != nil || got.r.Status != assessment.StatusGrading {
			t.Fatalf("a wait at shutdown: %s, %v", got.r.Status, got.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("shutting down did not end the wait")
	}
	if got := <-f.await(f.staff, r.ID, 20*time.Second); got.err != nil || got.after > time.Second {
		t.Fatalf("a wait after shutdown: %v after %s", got.err, got.after)
	}

	finished := f.submit(t, false)
	if got := <-f.await(f.staff, finished.ID, 20*time.Second); got.err != nil || got.r.Status != assessment.StatusGraded || got.after > time.Second {
		t.Fatalf("a finished result: %s, %v after %s", got.r.Status, got.err, got.after)
	}
}
