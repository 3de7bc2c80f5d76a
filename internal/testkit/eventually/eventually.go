// Package eventually waits in tests for a condition that another goroutine
// or process makes true, instead of sleeping for a guessed duration.
package eventually

import (
	"testing"
	"time"
)

// interval is how often a condition is checked.
const interval = 20 * time.Millisecond

// Succeeds calls check until it returns nil, and fails t with check's last
// error once within has passed. check's error says what is still missing;
// it may call t.Fatal for failures that waiting cannot fix.
func Succeeds(t testing.TB, within time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %v", within, err)
		}
		<-tick.C
	}
}
