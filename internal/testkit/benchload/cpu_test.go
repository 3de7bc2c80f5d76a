package benchload

import (
	"context"
	"runtime"
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
	spins := 0
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); spins++ {
	}
	if spins == 0 {
		t.Fatal("the clock did not advance")
	}
	// About a quarter of a second of the server's CPU, in one backend.
	var n int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM generate_series(1, 5000000)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	after := ReadUsage()
	// No side can use more than every core for the whole time.
	most := time.Since(start) * time.Duration(runtime.NumCPU())

	if got := after.Process - before.Process; got < 150*time.Millisecond || got > most {
		t.Errorf("process CPU grew by %v over a 200 ms spin (at most %v possible)", got, most)
	}
	if got := after.Postgres - before.Postgres; got < 50*time.Millisecond || got > most {
		t.Errorf("postgres CPU grew by %v over a 5,000,000-row count (at most %v possible)", got, most)
	}
}
