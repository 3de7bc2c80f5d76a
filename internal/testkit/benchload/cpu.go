package benchload

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Usage is CPU time used so far by this process (the load generator and
// whatever server it runs in process), by the local PostgreSQL's processes
// and by a local Temporal dev server. Measured over a run, it says which
// part of the system a request's cost is on. Postgres and Temporal are zero
// where no such process is visible (another host, or no /proc).
type Usage struct {
	Process, Postgres, Temporal time.Duration
}

// ReadUsage reads the CPU time used so far.
func ReadUsage() Usage {
	var u Usage
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.Process = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	byName := commandsCPU()
	u.Postgres, u.Temporal = byName["postgres"], byName["temporal"]
	return u
}

// Total is the CPU time of all three.
func (u Usage) Total() time.Duration { return u.Process + u.Postgres + u.Temporal }

// Per is the usage from since to u, divided among n units of work.
func (u Usage) Per(since Usage, n int) Usage {
	if n <= 0 {
		return Usage{}
	}
	d := time.Duration(n)
	return Usage{(u.Process - since.Process) / d, (u.Postgres - since.Postgres) / d, (u.Temporal - since.Temporal) / d}
}

// userHZ is the unit of /proc/<pid>/stat's times: Linux reports them in
// USER_HZ, which is 100 on every architecture it exports to user space.
const userHZ = 100

// commandsCPU sums the CPU time of the processes by command name (for
// PostgreSQL the postmaster and its backends and workers), with the time of
// their children that have ended: a backend that exits between two
// readings moves its time to the postmaster that reaps it instead of
// taking it away (other tests' connections close while one measures).
func commandsCPU() map[string]time.Duration {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	ticks := map[string]int64{}
	for _, path := range stats {
		b, err := os.ReadFile(path) //nolint:gosec // G304: /proc paths from the glob above
		if err != nil {
			continue // the process ended
		}
		// pid (comm) state ppid ... utime stime: comm may hold spaces and
		// parentheses, so the fields are counted from the last ')'.
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || end < open {
			continue
		}
		// utime, stime, cutime and cstime.
		fields := bytes.Fields(b[end+1:])
		if len(fields) < 15 {
			continue
		}
		var sum int64
		for _, f := range fields[11:15] {
			n, err := strconv.ParseInt(string(f), 10, 64)
			if err != nil {
				sum = -1
				break
			}
			sum += n
		}
		if sum >= 0 {
			ticks[string(b[open+1:end])] += sum
		}
	}
	out := make(map[string]time.Duration, len(ticks))
	for name, t := range ticks {
		out[name] = time.Duration(t) * time.Second / userHZ
	}
	return out
}
