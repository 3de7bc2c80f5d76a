// Package devenvtest gives tests a Temporal dev server (the CLI built by
// make tools) and a client on it, both stopped when the test ends.
package devenvtest

import (
	"context"
	"io"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/assessd/assessd/internal/devenv"
)

// Temporal starts a dev server for t and returns a client on it; it skips
// t in -short mode.
func Temporal(t testing.TB) client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Temporal dev server")
	}
	server, err := devenv.StartTemporal(context.Background(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Stop() })
	c, err := devenv.DialTemporal(server.Address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
