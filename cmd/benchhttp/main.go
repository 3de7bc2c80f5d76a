// Command benchhttp measures authenticated GET /users/{id} through the
// whole assessd stack against a minimal baseline handler that runs the same
// single-row pgx query with nothing around it, in the same run and on the
// same database, and prints both and their ratio.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/redis/go-redis/v9"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "benchhttp:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) (err error) {
	concurrency := flag.Int("c", 64, "concurrent clients")
	duration := flag.Duration("d", 4*time.Second, "measured duration per target and round")
	rounds := flag.Int("rounds", 3, "rounds; each measures the baseline, then assessd")
	warmup := flag.Duration("warmup", 2*time.Second, "warm-up per target")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the last assessd run to this file")
	flag.Parse()

	dbURL, drop, err := storetest.Create(ctx, "assessd_bench")
	if drop != nil {
		// A database left behind is worth a failed run: report it.
		defer func() { err = errors.Join(err, drop()) }()
	}
	if err != nil {
		return err
	}
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	// The quota is checked on every request, as in production, but set
	// high enough that the load is never throttled.
	a, err := app.New(ctx, db, app.Config{BaseURL: "http://127.0.0.1", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Redis: redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}), RateLimitPrefix: "bench:" + ids.New("rl_") + ":",
		RequestsPerMinute: func(string) int { return 1_000_000_000 }})
	if err != nil {
		return err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch() // before the database is dropped
	a.Start(watchCtx)
	userID, key, err := seed(ctx, a.Tenancy)
	if err != nil {
		return err
	}
	ours, stopOurs, err := listen(a.Handler)
	if err != nil {
		return err
	}
	defer stopOurs()

	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	base, stopBase, err := listen(baseline(pool))
	if err != nil {
		return err
	}
	defer stopBase()

	fmt.Printf("GET /users/{id}, %d concurrent clients, %d rounds of %s per target, loopback\n\n", *concurrency, *rounds, *duration)
	fmt.Printf("%-6s %-10s %10s %9s %9s %9s\n", "round", "target", "req/s", "p50 ms", "p99 ms", "errors")
	var ratios []float64
	var baseRes, ourRes result
	for round := 1; round <= *rounds; round++ {
		baseRes = load(base+"/users/"+userID, "", *concurrency, *warmup, *duration)
		baseRes.print(round, "baseline")
		if round == *rounds && *cpuProfile != "" {
			stop, err := startProfile(*cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
		}
		ourRes = load(ours+"/users/"+userID, key, *concurrency, *warmup, *duration)
		ourRes.print(round, "assessd")
		ratios = append(ratios, ourRes.rps/baseRes.rps)
		if ourRes.errors > 0 || baseRes.errors > 0 {
			return errors.New("requests failed during the benchmark")
		}
	}
	slices.Sort(ratios)
	fmt.Printf("\nthroughput ratio assessd/baseline, median of %d rounds: %.2f (rounds %.2f); target >= 0.70\n",
		len(ratios), ratios[len(ratios)/2], ratios)
	fmt.Printf("assessd p99 in the last round: %.2f ms; target < 10 ms\n", ms(ourRes.p99))
	return nil
}

func startProfile(path string) (func(), error) {
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
			fmt.Fprintln(os.Stderr, "benchhttp: cpu profile:", err)
		}
	}, nil
}
func seed(ctx context.Context, svc *tenancy.Service) (userID, key string, err error) {
	org, err := svc.CreateOrg(ctx, tenancy.NewOrg{Name: "Bench", Country: "US", Plan: tenancy.PlanPro})
	if err != nil {
		return "", "", err
	}
	ctx = tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	u, err := svc.CreateUser(ctx, tenancy.NewUser{Email: "bench@example.com", Name: "Bench", Role: tenancy.RoleAdmin,
		Metadata: tenancy.MetadataPatch{"grade": "7", "team": "red"}})
	if err != nil {
		return "", "", err
	}
	_, key, err = svc.CreateAPIKey(ctx, u.ID, "bench")
	return u.ID, key, err
}

// baseline answers GET /users/{id} with one pgx query and encoding/json:
// no authentication, tenancy, transcoding, logging or metrics.
func baseline(pool *pgxpool.Pool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /users/{id}", func(w http.ResponseWriter, r *http.Request) {
		var u struct {
			ID        string         `json:"id"`
			OrgID     string         `json:"orgId"`
			Email     string         `json:"email"`
			Name      string         `json:"name"`
			Role      string         `json:"role"`
			Metadata  map[string]any `json:"metadata"`
			CreatedAt time.Time      `json:"createdAt"`
			UpdatedAt time.Time      `json:"updatedAt"`
		}
		err := pool.QueryRow(r.Context(), `SELECT id, org_id, email, name, role, metadata, created_at, updated_at FROM users WHERE id = $1`,
			r.PathValue("id")).Scan(&u.ID, &u.OrgID, &u.Email, &u.Name, &u.Role, &u.Metadata, &u.CreatedAt, &u.UpdatedAt)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(u)
	})
	return mux
}

func listen(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

type result struct {
	rps      float64
	p50, p99 time.Duration
	errors   int
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (r result) print(round int, name string) {
	fmt.Printf("%-6d %-10s %10.0f %9.2f %9.2f %9d\n", round, name, r.rps, ms(r.p50), ms(r.p99), r.errors)
}

// load runs clients goroutines sending GET url back to back for warmup
// (discarded) and then for d, and summarizes the measured part.
func load(url, key string, clients int, warmup, d time.Duration) result {
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
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			var errs int
			for {
				t0 := time.Now()
				if t0.After(end) {
					break
				}
				ok := get(client, url, key)
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
		}()
	}
	wg.Wait()
	slices.Sort(latencies)
	if len(latencies) == 0 {
		return result{errors: failures}
	}
	return result{
		rps:    float64(len(latencies)) / d.Seconds(),
		p50:    latencies[len(latencies)/2],
		p99:    latencies[len(latencies)*99/100],
		errors: failures,
	}
}

func get(c *http.Client, url, key string) bool {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := c.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}
