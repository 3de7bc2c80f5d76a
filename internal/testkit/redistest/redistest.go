// Package redistest gives each test a Redis of its own: a private
// redis-server (the machine's, as CI installs it) listening on a unix
// socket, with nothing on disk, stopped when the test ends. Tests then talk
// to the real server without sharing keys with each other. -short mode,
// which runs without a Redis installation, uses an in-process one
// (miniredis) instead.
package redistest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Server is a private redis-server.
type Server struct {
	t    testing.TB
	sock string
	cmd  *exec.Cmd
}

// Start starts a private redis-server, stopped when t ends. In -short mode
// it skips t.
func Start(t testing.TB) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("needs redis-server, which -short runs without")
	}
	// A directory of its own under the system's temporary one: a socket's
	// path must stay under about 100 bytes, which t.TempDir() with a long
	// test name can exceed.
	dir, err := os.MkdirTemp("", "redis")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	s := &Server{t: t, sock: filepath.Join(dir, "redis.sock")}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start() {
	s.t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		s.t.Fatal("redis-server is not installed (apt-get install redis-server); go test -short runs without it")
	}
	s.cmd = exec.Command(path, "--port", "0", "--unixsocket", s.sock, "--unixsocketperm", "700",
		"--save", "", "--appendonly", "no", "--dir", filepath.Dir(s.sock), "--loglevel", "warning")
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	c := s.Client(&redis.Options{MaxRetries: -1})
	defer func() { _ = c.Close() }()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			s.Stop()
			s.t.Fatal("redis-server did not answer within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Client returns a client of the server, with opts' settings but its
// address; the caller closes it.
func (s *Server) Client(opts *redis.Options) *redis.Client {
	o := *opts
	o.Network, o.Addr = "unix", s.sock
	return redis.NewClient(&o)
}

// URL is the server's address as a REDIS_URL.
func (s *Server) URL() string { return "unix://" + s.sock }

// Stop stops the server; stopping a stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart starts the stopped server again on the same address, empty.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Client returns a client of a Redis of t's own; both stop when t ends.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	var c *redis.Client
	if testing.Short() {
		c = redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	} else {
		c = Start(t).Client(&redis.Options{})
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// URL starts a Redis of t's own, stopped when t ends, and returns its URL,
// for code configured through REDIS_URL.
func URL(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		return "redis://" + miniredis.RunT(t).Addr() + "/0"
	}
	return Start(t).URL()
}
