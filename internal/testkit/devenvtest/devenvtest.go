// Package devenvtest gives tests a Temporal dev server (the CLI built by
// make tools) and a client on it, both stopped when the test ends. Tests
// using them skip in -short mode, which runs without Temporal.
package devenvtest

import (
	"context"
	"io"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/assessd/assessd/internal/devenv"
)

// Server starts a dev server for t, stopped when t ends, for tests that
// hand its address to the code under test; it skips t in -short mode.
func Server(t testing.TB) *devenv.Temporal {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Temporal dev server")
	}
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
