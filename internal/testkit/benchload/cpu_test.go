package benchload

import (
	"context"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/testkit/storetest"
)

func TestReadCPUCountsBothSides(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, storetest.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	start, before := time.Now(), ReadUsage()
	if before.Postgres == 0 {
		t.Fatal("no postgres process visible in /proc; the tests' PostgreSQL runs on this host")
	}
	spun := spin(t, 200*time.Millisecond)
	// About a quarter of a second of the server's CPU, in one backend.
	var n int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM generate_series(1, 5000000)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	after := ReadUsage()
	// No side can use more than every core for the whole time.
	most := time.Since(start) * time.Duration(runtime.NumCPU())

	if got := after.Process - before.Process; got < spun || got > most {
		t.Errorf("process CPU grew by %v over a spin of %v on one thread (at most %v possible)", got, spun, most)
	}
	if got := after.Postgres - before.Postgres; got < 50*time.Millisecond || got > most {
		t.Errorf("postgres CPU grew by %v over a 5,000,000-row count (at most %v possible)", got, most)
	}
}

// spin keeps one OS thread busy until it has used at least cpu (however
// busy the machine is) and returns the CPU it used, by the thread's own
// account.
func spin(t *testing.T, cpu time.Duration) time.Duration {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	used := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	from := used()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if d := used() - from; d >= cpu {
			return d
		}
	}
	t.Fatalf("one thread did not get %v of CPU in 30 s", cpu)
	return 0
}
