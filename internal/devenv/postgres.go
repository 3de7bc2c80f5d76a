// Package devenv starts the private dependencies of `assessd dev` when the
// environment names none: a throwaway PostgreSQL cluster built from the
// machine's server binaries.
package devenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Postgres is a running private cluster.
type Postgres struct {
	URL     string
	dataDir string
	bin     string
	cred    *syscall.Credential
}

// StartPostgres initializes a cluster in a new directory under parent and
// starts it on a free loopback port. PostgreSQL refuses to run as root, so
// as root it runs as the system's postgres user.
func StartPostgres(ctx context.Context, parent string) (*Postgres, error) {
	bin, err := findPostgresBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, "assessd-pg-")
	if err != nil {
		return nil, err
	}
	p := &Postgres{dataDir: filepath.Join(dir, "data"), bin: bin}
	if os.Geteuid() == 0 {
		if p.cred, err = postgresCredential(); err != nil {
			return nil, err
		}
		if err := os.Chown(dir, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	if err := p.run(ctx, "initdb", "-D", p.dataDir, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"); err != nil {
		return nil, err
	}
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c fsync=off", port, dir)
	if err := p.run(ctx, "pg_ctl", "-D", p.dataDir, "-o", opts, "-l", filepath.Join(dir, "postgres.log"), "-w", "start"); err != nil {
		return nil, err
	}
	p.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	if err := waitReady(ctx, p.URL); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// Stop shuts the cluster down and deletes its files.
func (p *Postgres) Stop() {
	_ = p.run(context.Background(), "pg_ctl", "-D", p.dataDir, "-m", "fast", "-w", "stop")
	_ = os.RemoveAll(filepath.Dir(p.dataDir))
}

func (p *Postgres) run(ctx context.Context, name string, args ...string) error {
	// G204: a PostgreSQL program (initdb, pg_ctl) of the local install
	// with the dev cluster's own arguments, run without a shell.
	cmd := exec.CommandContext(ctx, filepath.Join(p.bin, name), args...) //nolint:gosec // G204, see above
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", name, err, out)
	}
	return nil
}

func findPostgresBin() (string, error) {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) == 0 {
		if path, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(path), nil
		}
		return "", errors.New("devenv: no PostgreSQL server binaries found; install postgresql or set DATABASE_URL")
	}
	sort.Strings(matches)
	return filepath.Dir(matches[len(matches)-1]), nil
}

func postgresCredential() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("devenv: running as root needs a postgres system user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitReady(ctx context.Context, url string) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, url)
		if err == nil {
			return conn.Close(ctx)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("devenv: postgres did not become ready: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
