package expr

import "time"

// HoldSlots takes every evaluation slot of the process, as a burst of
// other evaluations would, until release is called.
func HoldSlots() (release func()) {
	for range cap(slots) {
		slots <- struct{}{}
	}
	return func() {
		for range cap(slots) {
			<-slots
		}
	}
}

// Running is how many evaluations hold a process slot, finished or not
// for their callers.
func Running() int { return len(slots) }

// WaitIdle waits until no evaluation runs: the slow ones a test started
// keep running after their callers stopped waiting.
func WaitIdle() {
	for len(slots) > 0 {
		time.Sleep(10 * time.Millisecond)
	}
}
