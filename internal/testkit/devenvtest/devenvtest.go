// Package devenvtest gives tests a Temporal dev server (the CLI built by
// make tools) and a client on it, both stopped when the test ends. Tests
// using them skip in -short mode, which runs without Temporal.
package devenvtest

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/assessd/assessd/internal/devenv"
)

// Server starts a dev server for t, stopped when t ends, for tests that
// hand its address to the code under test; it skips t in -short mode.
func Server(t testing.TB) *devenv.Temporal {
	t.Helper()
	skipShort(t)
	server, err := devenv.StartTemporal(context.Background(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Stop() })
	return server
}

// Temporal starts a dev server for t and returns a client on it; it skips
// t in -short mode.
func Temporal(t testing.TB) client.Client {
	t.Helper()
	c, err := devenv.DialTemporal(Server(t).Address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Restartable is a dev server a test stops and starts again on the same
// address, as a Temporal outage looks to the clients of it.
type Restartable struct {
	t testing.TB
	// Address is the frontend host:port, the same across restarts.
	Address string
	// dbFile keeps the server's state across restarts; "" keeps it in
	// memory, lost at each stop.
	dbFile string
	server *devenv.Temporal
}

// StartRestartable starts a Restartable dev server for t, stopped when t
// ends; it skips t in -short mode. A restarted server has lost every
// workflow, as an in-memory one does.
func StartRestartable(t testing.TB) *Restartable {
	t.Helper()
	return startRestartable(t, "")
}

// StartPersistent is StartRestartable with the server's state in a file of
// t's: a restarted server resumes every workflow and fires the timers due
// while it was down, as a cluster restarted on its database does.
func StartPersistent(t testing.TB) *Restartable {
	t.Helper()
	return startRestartable(t, filepath.Join(t.TempDir(), "temporal.db"))
}

func startRestartable(t testing.TB, dbFile string) *Restartable {
	t.Helper()
	skipShort(t)
	r := &Restartable{t: t, dbFile: dbFile}
	r.Start()
	t.Cleanup(func() {
		if r.server != nil {
			_ = r.server.Stop()
		}
	})
	return r
}

// Start starts the server (again) on its address.
func (r *Restartable) Start() {
	r.t.Helper()
	server, err := devenv.StartTemporalWith(context.Background(), devenv.TemporalOptions{Address: r.Address, DBFile: r.dbFile}, io.Discard)
	if err != nil {
		r.t.Fatal(err)
	}
	r.server, r.Address = server, server.Address
}

// Stop stops the server.
func (r *Restartable) Stop() {
	r.t.Helper()
	if err := r.server.Stop(); err != nil {
		r.t.Fatal(err)
	}
	r.server = nil
}

func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Temporal dev server")
	}
}
