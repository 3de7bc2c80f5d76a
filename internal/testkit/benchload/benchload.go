// Package benchload drives HTTP load for the benchmark commands: clients
// sending requests back to back over loopback, a warm-up that is not
// counted, then throughput and latency percentiles of the measured part.
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
	"sync"
	"time"
)

// Result summarizes one measured run.
type Result struct {
	RPS      float64
	P50, P99 time.Duration
	Errors   int
}

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// PrintHeader prints the column names Print fills.
func PrintHeader() {
	fmt.Printf("%-6s %-10s %10s %9s %9s %9s\n", "round", "target", "req/s", "p50 ms", "p99 ms", "errors")
}

// Print prints r as one row of round.
func (r Result) Print(round int, name string) {
	fmt.Printf("%-6d %-10s %10.0f %9.2f %9.2f %9d\n", round, name, r.RPS, Ms(r.P50), Ms(r.P99), r.Errors)
}

// Run has clients goroutines call send back to back, each with its own
// worker number (for state a client carries from one request to the next)
// and a shared HTTP client, for warmup (not counted) and then for d. send
// reports whether its request succeeded.
func Run(clients int, warmup, d time.Duration, send func(c *http.Client, worker int) bool) Result {
	tr := &http.Transport{MaxIdleConns: clients, MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		failures  int
		wg        sync.WaitGroup
	)
	start := time.Now()
	measureFrom, end := start.Add(warmup), start.Add(warmup+d)
	for worker := range clients {
		wg.Go(func() {
			var mine []time.Duration
			var errs int
			for {
				t0 := time.Now()
				if t0.After(end) {
					break
				}
				ok := send(client, worker)
				if t0.After(measureFrom) {
					mine = append(mine, time.Since(t0))
					if !ok {
						errs++
					}
				}
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			failures += errs
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(latencies)
	if len(latencies) == 0 {
		return Result{Errors: failures}
	}
	return Result{
		RPS:    float64(len(latencies)) / d.Seconds(),
		P50:    latencies[len(latencies)/2],
		P99:    latencies[len(latencies)*99/100],
		Errors: failures,
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
