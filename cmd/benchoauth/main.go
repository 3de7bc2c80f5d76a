// Command benchoauth measures the OAuth provider's two hot paths:
// refresh-token grants (each client rotating its own refresh token, as a
// relying party does) and API requests authenticated with an OAuth access
// token (GET /me). Its baseline is an Ory Hydra the operator runs beside it
// (-hydra-public, -hydra-admin; this repository does not build Hydra):
// Hydra's refresh grants and its token introspection, measured in the same
// run with the same load and the same kind of client (public, PKCE), and
// the ratios printed. Without Hydra it prints assessd's figures alone.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/testkit/benchenv"
	"github.com/assessd/assessd/internal/testkit/benchload"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "benchoauth:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) (err error) {
	grantClients := flag.Int("grant-clients", 16, "clients each rotating its own refresh token")
	requestClients := flag.Int("request-clients", 64, "clients sending authenticated requests")
	duration := flag.Duration("d", 4*time.Second, "measured duration per target and round")
	warmup := flag.Duration("warmup", 2*time.Second, "warm-up per target")
	rounds := flag.Int("rounds", 3, "rounds; each measures Hydra, then assessd")
	hydraPublic := flag.String("hydra-public", "", "base URL of Hydra's public API, e.g. http://127.0.0.1:4444")
	hydraAdmin := flag.String("hydra-admin", "", "base URL of Hydra's admin API, e.g. http://127.0.0.1:4445")
	cpuProfile := flag.String("cpuprofile", "", "write CPU profiles of assessd's last round of each measure to this path with -requests and -grants appended")
	flag.Parse()

	env, err := benchenv.Start(ctx, "assessd_benchoauth")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Close()) }()
	var a *app.App
	base, stop, err := benchload.Listen(lateHandler(func() *app.App { return a }))
	if err != nil {
		return err
	}
	defer stop()
	if a, err = env.StartApp(ctx, base); err != nil {
		return err
	}

	chains := *grantClients
	ours, err := newAssessd(ctx, a, base, chains)
	if err != nil {
		return fmt.Errorf("assessd: %w", err)
	}
	var hydra *provider
	if *hydraPublic != "" && *hydraAdmin != "" {
		if hydra, err = newHydra(ctx, *hydraPublic, *hydraAdmin, chains); err != nil {
			return fmt.Errorf("hydra: %w", err)
		}
	}
	m := measure{rounds: *rounds, warmup: *warmup, d: *duration, profile: *cpuProfile}
	fmt.Printf("Authenticated requests with an OAuth access token, %d clients: assessd GET /me against Hydra's token introspection\n\n", *requestClients)
	if err := m.compare(hydra, ours, *requestClients, (*provider).authenticated, "-requests"); err != nil {
		return err
	}
	fmt.Printf("\nRefresh-token grants, %d clients each rotating its own refresh token (public clients, PKCE)\n\n", *grantClients)
	return m.compare(hydra, ours, *grantClients, (*provider).refreshGrant, "-grants")
}

// measure runs both providers in alternating rounds.
type measure struct {
	rounds    int
	warmup, d time.Duration
	// profile, when set, is where CPU profiles of assessd's last rounds go.
	profile string
}

// compare measures send on hydra (when there is one) and ours, round after
// round, and prints the median ratio; the last assessd round is profiled
// to m.profile+suffix when asked.
func (m measure) compare(hydra, ours *provider, clients int, send sender, suffix string) error {
	benchload.PrintHeader()
	var ratios []float64
	for round := 1; round <= m.rounds; round++ {
		var base benchload.Result
		if hydra != nil {
			base = benchload.Run(clients, m.warmup, m.d, hydra.sender(send))
			base.Print(round, hydra.name)
		}
		if round == m.rounds && m.profile != "" {
			stop, err := benchload.StartCPUProfile(m.profile + suffix)
			if err != nil {
				return err
			}
			defer stop()
		}
		res := benchload.Run(clients, m.warmup, m.d, ours.sender(send))
		res.Print(round, ours.name)
		if res.Errors > 0 || base.Errors > 0 {
			return errors.New("requests failed during the benchmark")
		}
		if hydra != nil {
			ratios = append(ratios, res.RPS/base.RPS)
		}
	}
	if len(ratios) == 0 {
		fmt.Println("\nno Hydra given (-hydra-public, -hydra-admin): no ratio")
		return nil
	}
	slices.Sort(ratios)
	fmt.Printf("\nthroughput ratio assessd/Hydra, median of %d rounds: %.2f\n", m.rounds, ratios[len(ratios)/2])
	return nil
}

// lateHandler serves the app's handler once it exists: the app needs its
// own URL (the OIDC issuer) before it is built.
func lateHandler(a func() *app.App) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a().Handler.ServeHTTP(w, r) })
}
