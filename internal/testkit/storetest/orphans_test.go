package storetest

import (
	"context"
	"os/exec"
	"slices"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestOrphanedDatabasesAreDropped: a database that a dead process of this
// host made is dropped; one of a live process, or of another host whose
// process ids mean nothing here, stays.
func TestOrphanedDatabasesAreDropped(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := strconv.Itoa(exited.Process.Pid)
	otherHost := "000000"
	if hostTag == otherHost {
		otherHost = "ffffff"
	}
	dead := "assessd_orphantest_" + hostTag + "_" + deadPID + "_0a"
	live := ownedName("assessd_orphantest", "0b")
	foreign := "assessd_orphantest_" + otherHost + "_" + deadPID + "_0c"
	for _, name := range []string{dead, live, foreign} {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name) })
	}

	dropped, err := dropOrphans(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(dropped, dead) || slices.Contains(dropped, live) || slices.Contains(dropped, foreign) {
		t.Fatalf("dropped %v; want %s and neither %s nor %s", dropped, dead, live, foreign)
	}
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'assessd\_orphantest\_%'`)
	if err != nil {
		t.Fatal(err)
	}
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(left)
	if want := []string{foreign, live}; !slices.Equal(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}
}
