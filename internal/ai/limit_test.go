package ai

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slowGrader counts the Grade calls in flight and the most at once.
type slowGrader struct {
	Provider
	inFlight, most atomic.Int32
	release        chan struct{}
}

func (s *slowGrader) Grade(context.Context, GradeRequest) (Grade, error) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.most.Load()
		if n <= m || s.most.CompareAndSwap(m, n) {
			break
		}
	}
	<-s.release
	return Grade{Score: 1}, nil
}

func TestLimitBoundsCallsInFlight(t *testing.T) {
	p := &slowGrader{release: make(chan struct{})}
	bounded := Limit(p, 3)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if g, err := bounded.Grade(context.Background(), GradeRequest{}); err != nil || g.Score != 1 {
				t.Errorf("grade %+v, %v", g, err)
			}
		})
	}
	for deadline := time.Now().Add(5 * time.Second); p.inFlight.Load() < 3 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	close(p.release)
	wg.Wait()
	if got := p.most.Load(); got != 3 {
		t.Fatalf("%d calls in flight at most, want 3", got)
	}

	// A call waiting for its turn gives up with its context.
	full := Limit(&slowGrader{release: make(chan struct{})}, 1)
	go func() { _, _ = full.Grade(context.Background(), GradeRequest{}) }()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	for len(full.(*limited).slots) == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := full.Grade(ctx, GradeRequest{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting call: err %v, want the context's deadline", err)
	}
}
