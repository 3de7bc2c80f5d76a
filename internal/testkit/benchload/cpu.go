package benchload

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// cpuTimes is CPU time used so far by this process (the load generator and
// whatever server it runs in process) and by the local PostgreSQL's
// processes. Measured over a run, it says which side of the database
// connection a request's cost is on.
type cpuTimes struct {
	process, postgres time.Duration
	// postgresSeen is false where no PostgreSQL process is visible (another
	// host, or no /proc): postgres then means nothing.
	postgresSeen bool
}

func readCPU() cpuTimes {
	var t cpuTimes
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		t.process = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	t.postgres, t.postgresSeen = postgresCPU()
	return t
}

// userHZ is the unit of /proc/<pid>/stat's times: Linux reports them in
// USER_HZ, which is 100 on every architecture it exports to user space.
const userHZ = 100

// postgresCPU sums the CPU time of the processes named postgres (the
// postmaster and its backends and workers). A backend that exits between two
// readings takes its time with it; the benchmarks' pools keep theirs open.
func postgresCPU() (time.Duration, bool) {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	seen := false
	for _, path := range stats {
		b, err := os.ReadFile(path) //nolint:gosec // G304: /proc paths from the glob above
		if err != nil {
			continue // the process ended
		}
		// pid (comm) state ppid ... utime stime: comm may hold spaces and
		// parentheses, so the fields are counted from the last ')'.
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || end < open || string(b[open+1:end]) != "postgres" {
			continue
		}
		fields := bytes.Fields(b[end+1:])
		if len(fields) < 13 {
			continue
		}
		utime, err1 := strconv.ParseInt(string(fields[11]), 10, 64)
		stime, err2 := strconv.ParseInt(string(fields[12]), 10, 64)
		if err1 == nil && err2 == nil {
			ticks += utime + stime
			seen = true
		}
	}
	return time.Duration(ticks) * time.Second / userHZ, seen
}
