package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"
	"syscall"

	"github.com/jackc/pgx/v5"
)

// A benchmark's database (and a test's, when every slot is taken) is named
// after the process that made it: <prefix>_<host>_<pid>_<random>. A process that dies without cleaning up
// (SIGKILL, go test's -timeout) leaves its database behind; the next
// process of the same host to make one drops those whose process is gone.

// hostTag tells this host's databases from those of another machine or
// container sharing the server, whose process ids mean nothing here.
var hostTag = func() string {
	name, _ := os.Hostname()
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:3])
}()

// ownedName is a database name of prefix owned by this process.
func ownedName(prefix, random string) string {
	return fmt.Sprintf("%s_%s_%d_%s", prefix, hostTag, os.Getpid(), random)
}

var ownedPattern = regexp.MustCompile(`^[a-z0-9_]+_([0-9a-f]{6})_([0-9]+)_[0-9a-f]+$`)

// orphan reports whether the database name was made by a process of this
// host that no longer runs.
func orphan(name string) bool {
	m := ownedPattern.FindStringSubmatch(name)
	if m == nil || m[1] != hostTag {
		return false
	}
	pid, err := strconv.Atoi(m[2])
	if err != nil {
		return false
	}
	// Signal 0 checks that the process exists without touching it; EPERM
	// means it runs as another user.
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// dropOrphans drops the databases on conn's server that dead processes of
// this host left, and returns their names.
func dropOrphans(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'assessd\_%'`)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var dropped []string
	for _, name := range names {
		if !orphan(name) {
			continue
		}
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			return dropped, fmt.Errorf("drop %s: %w", name, err)
		}
		dropped = append(dropped, name)
	}
	return dropped, nil
}

// orphansDropped runs dropOrphans once per process, before its first
// database: a failure only leaves the orphans for the next process.
var orphansDropped sync.Once
