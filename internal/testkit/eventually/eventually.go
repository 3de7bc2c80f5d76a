// Package eventually waits in tests for a condition that another goroutine
// or process makes true, instead of sleeping for a guessed duration.
package eventually

import (
	"testing"
	"time"
)

// The wait between checks starts short, so quick conditions are seen at
// once, and doubles up to maxInterval, so a long wait polling an API stays
// well inside its rate limits.
const (
	firstInterval = 10 * time.Millisecond
	maxInterval   = 250 * time.Millisecond
)

// Succeeds calls check until it returns nil, and fails t with check's last
// error once within has passed. check's error says what is still missing;
// it may call t.Fatal for failures that waiting cannot fix.
func Succeeds(t testing.TB, within time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for wait := firstInterval; ; wait = min(2*wait, maxInterval) {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %v", within, err)
		}
		time.Sleep(wait)
	}
}
