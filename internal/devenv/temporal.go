package devenv

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
)

// Temporal is a running Temporal dev server.
type Temporal struct {
	server *testsuite.DevServer
	// Address is the frontend host:port.
	Address string
}

// TemporalCLI finds the temporal CLI that `make tools` builds into ./bin
// (no download ever happens at run time), or one on PATH.
func TemporalCLI() (string, error) {
	for dir := "."; ; dir = filepath.Join(dir, "..") {
		candidate := filepath.Join(dir, "bin", "temporal")
		if _, err := os.Stat(candidate); err == nil {
			return filepath.Abs(candidate)
		}
		if abs, _ := filepath.Abs(dir); abs == "/" {
			break
		}
	}
	if path, err := exec.LookPath("temporal"); err == nil {
		return path, nil
	}
	return "", errors.New("devenv: no temporal CLI: run 'make tools' or set TEMPORAL_ADDRESS")
}

// StartTemporal starts a Temporal dev server (in-memory, headless) on a free
// loopback port. Its output goes to logs.
func StartTemporal(ctx context.Context, logs io.Writer) (*Temporal, error) {
	return StartTemporalWith(ctx, TemporalOptions{}, logs)
}

// TemporalOptions are where a dev server listens and keeps its state.
type TemporalOptions struct {
	// Address is the frontend's host:port; "" picks a free loopback port.
	// Starting a server again on the address of a stopped one lets clients
	// of the old one reconnect, as after a restart.
	Address string
	// DBFile, when set, keeps the server's state (workflows, their
	// histories and timers) in that SQLite file instead of in memory: a
	// server started again on it resumes them, as a cluster restarted on
	// its database does.
	DBFile string
}

// StartTemporalWith starts a Temporal dev server as o says.
func StartTemporalWith(ctx context.Context, o TemporalOptions, logs io.Writer) (*Temporal, error) {
	path, err := TemporalCLI()
	if err != nil {
		return nil, err
	}
	server, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath:  path,
		ClientOptions: &client.Options{HostPort: o.Address, Namespace: "default", Logger: nopLogger{}},
		DBFilename:    o.DBFile,
		LogLevel:      "error",
		ExtraArgs: []string{
			// Activities scheduled by a workflow task start on the worker
			// that scheduled them, without a round trip through matching
			// (decision 0123), as on Temporal Cloud.
			"--dynamic-config-value", "system.enableActivityEagerExecution=true",
			// The dev server has one history shard, whose transfer queue
			// is read at most 20 times a second by default: past a burst of
			// about ten, every new workflow task waited some 45 ms to reach
			// matching (decision 0128).
			"--dynamic-config-value", "history.transferProcessorMaxPollRPS=" + transferReadsPerSecond,
		},
		Stdout: logs,
		Stderr: logs,
	})
	if err != nil {
		return nil, err
	}
	return &Temporal{server: server, Address: server.FrontendHostPort()}, nil
}

// transferReadsPerSecond bounds the reads of a history shard's transfer
// queue (Temporal's default: 20), here and in deploy/temporal/dynamicconfig.
const transferReadsPerSecond = "200"

// Stop shuts the dev server down.
func (t *Temporal) Stop() error { return t.server.Stop() }

// nopLogger keeps the SDK's startup chatter out of the process logs.
type nopLogger struct{}

func (nopLogger) Debug(string, ...any) {}
func (nopLogger) Info(string, ...any)  {}
func (nopLogger) Warn(string, ...any)  {}
func (nopLogger) Error(string, ...any) {}

// DialTemporal connects a client to address, without the SDK's log chatter
// or call compression (a dev server is on loopback).
func DialTemporal(address string) (client.Client, error) {
	return client.Dial(client.Options{HostPort: address, Logger: nopLogger{},
		ConnectionOptions: client.ConnectionOptions{GrpcCompression: &client.GrpcCompressionNone{}}})
}
