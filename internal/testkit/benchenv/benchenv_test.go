package benchenv

import (
	"context"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/testkit/storetest"
)

// An interrupted benchmark drops its database before it exits, instead of
// leaving it on the server.
func TestAnInterruptedRunDropsItsDatabase(t *testing.T) {
	ctx := context.Background()
	exited := make(chan int, 1)
	exitProcess = func(code int) { exited <- code }
	t.Cleanup(func() { exitProcess = os.Exit })

	env, err := Start(ctx, "assessd_benchenvtest")
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if !databaseExists(t, name) {
		t.Fatalf("database %s was not created", name)
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited:
		if code != 130 {
			t.Errorf("exit code %d, want 130 (SIGINT)", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the interrupted run did not exit")
	}
	if databaseExists(t, name) {
		t.Errorf("database %s is left behind", name)
	}
	if err := env.Close(); err != nil {
		t.Errorf("Close after the interruption: %v", err)
	}
}

func databaseExists(t *testing.T, name string) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, storetest.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	return exists
}
