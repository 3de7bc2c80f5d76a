// Package benchload drives HTTP load for the benchmark commands: clients
// sending requests back to back over loopback, a warm-up that is not
// counted, then throughput, latency percentiles and CPU time per request of
// the measured part.
package benchload

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Result summarizes one measured run.
type Result struct {
	RPS      float64
	P50, P99 time.Duration
	Errors   int
	// ProcessCPU is this process's CPU time per request (the load
	// generator's and, for a server running in process, the server's);
	// PostgresCPU the local PostgreSQL's, zero when none is visible.
	ProcessCPU, PostgresCPU time.Duration
}

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// PrintHeader prints the column names Print fills.
func PrintHeader() {
	fmt.Printf("%-6s %-10s %10s %9s %9s %9s %11s %11s\n", "round", "target", "req/s", "p50 ms", "p99 ms", "errors", "cpu go µs", "cpu pg µs")
}

// Print prints r as one row of round.
func (r Result) Print(round int, name string) {
	pg := "-"
	if r.PostgresCPU > 0 {
		pg = strconv.FormatInt(r.PostgresCPU.Microseconds(), 10)
	}
	fmt.Printf("%-6d %-10s %10.0f %9.2f %9.2f %9d %11d %11s\n", round, name, r.RPS, Ms(r.P50), Ms(r.P99), r.Errors, r.ProcessCPU.Microseconds(), pg)
}

// Run has clients goroutines call send back to back, each with its own
// worker number (for state a client carries from one request to the next)
// and a shared HTTP client, for warmup (not counted) and then for d. send
// reports whether its request succeeded.
func Run(clients int, warmup, d time.Duration, send func(c *http.Client, worker int) bool) Result {
	start := time.Now()
	end := start.Add(warmup + d)
	return drive(clients, start.Add(warmup), d, func() (time.Time, bool) {
		now := time.Now()
		return now, !now.After(end)
	}, send)
}

// RunAtRate offers rate requests a second over clients connections, for
// warmup (not counted) and then for d. Each request has a slot in a fixed
// schedule and its latency counts from that slot, so a server that falls
// behind shows as latency, not as a slower schedule (no coordinated
// omission).
func RunAtRate(clients int, rate float64, warmup, d time.Duration, send func(c *http.Client, worker int) bool) Result {
	start := time.Now()
	end := start.Add(warmup + d)
	slots := make(chan time.Time, 1<<16)
	go func() {
		defer close(slots)
		interval := time.Duration(float64(time.Second) / rate)
		for slot := start; slot.Before(end); slot = slot.Add(interval) {
			if wait := time.Until(slot); wait > 0 {
				time.Sleep(wait)
			}
			slots <- slot
		}
	}()
	return drive(clients, start.Add(warmup), d, func() (time.Time, bool) {
		slot, ok := <-slots
		return slot, ok
	}, send)
}

// drive has clients goroutines send a request for each slot next gives
// them, until it gives none, and summarizes the requests whose slot is
// after measureFrom, over d.
func drive(clients int, measureFrom time.Time, d time.Duration, next func() (time.Time, bool), send func(*http.Client, int) bool) Result {
	client, done := newClient(clients)
	defer done()
	cpu := make(chan [2]Usage, 1)
	go func() {
		time.Sleep(time.Until(measureFrom))
		from := ReadUsage()
		time.Sleep(time.Until(measureFrom.Add(d)))
		cpu <- [2]Usage{from, ReadUsage()}
	}()
	var col collector
	var wg sync.WaitGroup
	for worker := range clients {
		wg.Go(func() {
			var mine latencies
			for {
				slot, more := next()
				if !more {
					break
				}
				ok := send(client, worker)
				if slot.After(measureFrom) {
					mine.add(time.Since(slot), ok)
				}
			}
			col.merge(mine)
		})
	}
	wg.Wait()
	r := col.result(d)
	if span := <-cpu; r.RPS > 0 {
		per := span[1].Per(span[0], int(r.RPS*d.Seconds()))
		r.ProcessCPU, r.PostgresCPU = per.Process, per.Postgres
	}
	return r
}

func newClient(clients int) (*http.Client, func()) {
	tr := &http.Transport{MaxIdleConns: clients, MaxIdleConnsPerHost: clients}
	return &http.Client{Transport: tr}, tr.CloseIdleConnections
}

// latencies are one client's measured requests.
type latencies struct {
	of     []time.Duration
	failed int
}

func (l *latencies) add(d time.Duration, ok bool) {
	l.of = append(l.of, d)
	if !ok {
		l.failed++
	}
}

// collector gathers every client's latencies.
type collector struct {
	mu  sync.Mutex
	all latencies
}

func (c *collector) merge(l latencies) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all.of = append(c.all.of, l.of...)
	c.all.failed += l.failed
}

func (c *collector) result(d time.Duration) Result {
	all := c.all.of
	slices.Sort(all)
	if len(all) == 0 {
		return Result{Errors: c.all.failed}
	}
	return Result{
		RPS:    float64(len(all)) / d.Seconds(),
		P50:    all[len(all)/2],
		P99:    all[len(all)*99/100],
		Errors: c.all.failed,
	}
}

// Do sends req, with bearer as its bearer token when not empty, reads
// the answer to the end and reports whether it was a 200.
func Do(c *http.Client, req *http.Request, bearer string) bool {
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := c.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// Listen serves h on a loopback port and returns its base URL and a stop
// function.
func Listen(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// StartCPUProfile writes a CPU profile of the process to path until the
// returned function is called.
func StartCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path) //nolint:gosec // G304: the operator names the profile file (-cpuprofile)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "cpu profile:", err)
		}
	}, nil
}
