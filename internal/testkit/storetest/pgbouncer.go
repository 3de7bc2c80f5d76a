package storetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/store"
)

// PgBouncer starts PgBouncer in transaction pooling mode in front of the
// server of dbURL, with at most serverConns server connections per
// database, and returns dbURL rewritten to go through it, in the exec
// query mode (PgBouncer 1.18 has no prepared statements). PgBouncer stops
// when t ends. Without the pgbouncer binary the test fails; in -short mode
// it is skipped.
func PgBouncer(t testing.TB, dbURL string, serverConns int) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts PgBouncer")
	}
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		bin, err = exec.LookPath("/usr/sbin/pgbouncer")
	}
	if err != nil {
		t.Fatal("storetest: pgbouncer is not installed (apt-get install pgbouncer)")
	}
	target, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "assessd-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	userName := target.User.Username()
	files := map[string]string{
		"users.txt": fmt.Sprintf("%q \"\"\n", userName),
		"pgbouncer.ini": fmt.Sprintf(`[databases]
* = host=%s port=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = %d
max_client_conn = 500
server_reset_query =
logfile = %s
pidfile = %s
`, target.Hostname(), target.Port(), port, filepath.Join(dir, "users.txt"), serverConns,
			filepath.Join(dir, "pgbouncer.log"), filepath.Join(dir, "pgbouncer.pid")),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, filepath.Join(dir, "pgbouncer.ini"))
	if os.Geteuid() == 0 {
		// PgBouncer refuses to run as root.
		if err := chownToPostgres(dir); err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command("runuser", "-u", "postgres", "--", bin, filepath.Join(dir, "pgbouncer.ini"))
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("storetest: start pgbouncer: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case err := <-exited:
			t.Logf("pgbouncer stopped: %v", err)
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			t.Logf("pgbouncer killed: %v", <-exited)
		}
	})

	pooled := *target
	pooled.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	q := pooled.Query()
	q.Set(store.ExecModeParam, ExecMode)
	pooled.RawQuery = q.Encode()
	if err := waitReady(pooled.String(), exited); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
		t.Fatalf("storetest: pgbouncer: %v\n%s", err, log)
	}
	return pooled.String()
}

// waitReady waits until a query goes through url.
func waitReady(url string, exited <-chan error) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, url)
		if err == nil {
			err = conn.Ping(ctx)
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case werr := <-exited:
			return fmt.Errorf("exited: %v", werr)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func chownToPostgres(dir string) error {
	u, err := user.Lookup("postgres")
	if err != nil {
		return errors.New("storetest: pgbouncer refuses to run as root and there is no postgres user")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(path, uid, gid)
	})
}
