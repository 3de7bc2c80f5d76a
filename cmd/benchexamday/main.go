// Command benchexamday measures exam day (issue 55): N students, each with
// their own API key, start an attempt of an assignment given to their
// classes, save one response per question and submit, over HTTP against
// the app on loopback. It prints the rows, each beside its target:
//
//  1. saves per second of assessd against a bare net/http + pgx handler
//     upserting the same response rows (same table, same conflict key, one
//     commit per save), with the same students, clients and order in the
//     same run; the saves carry no Idempotency-Key, as the embed page sends
//     them. Beside it, the same students saving again back to back with an
//     Idempotency-Key on every save, as the SDK sends them by default;
//  2. the p99 of a save at half assessd's measured rate, beside the bare
//     handler's at the same rate;
//  3. acknowledged saves lost when one of two `assessd serve` processes is
//     killed (SIGKILL) and Redis restarted mid-run, the clients resending
//     a failed save to the other instance with the same Idempotency-Key.
//
// The attempts' deadline workflows and the results' grading wait in the
// outbox (no Temporal runs): neither is on a save's path.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/assessd/assessd/internal/delivery"
	"github.com/assessd/assessd/internal/testkit/benchenv"
	"github.com/assessd/assessd/internal/testkit/benchload"
	"github.com/assessd/assessd/tenancy"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "benchexamday:", err)
		os.Exit(1)
	}
}

// The targets.
const (
	targetRatio = 0.6
	targetP99   = 50 * time.Millisecond
)

func run(ctx context.Context) (err error) {
	n := flag.Int("n", 2000, "students, each taking the exam with their own API key")
	saves := flag.Int("saves", 10, "saves per student, one per question of the exam")
	clients := flag.Int("c", 64, "concurrent clients (students in flight at once)")
	keyedD := flag.Duration("keyed-d", 2*time.Second, "measured duration of each target saving with Idempotency-Keys")
	rateD := flag.Duration("rate-d", 2*time.Second, "measured duration of each target at half the rate")
	rateRounds := flag.Int("rate-rounds", 3, "rounds at half the rate (the p99 is their median)")
	killStudents := flag.Int("kill-students", 200, "students of the kill test")
	killD := flag.Duration("kill-d", 10*time.Second, "duration of the kill test")
	killEvery := flag.Duration("kill-every", time.Second, "how often each student of the kill test saves")
	assessdBin := flag.String("assessd", "", "assessd binary of the kill test (default: built from this module into a temporary directory)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of assessd's exam-day save phase to this file")
	keyedProfile := flag.String("keyed-cpuprofile", "", "write a CPU profile of assessd's saves with Idempotency-Keys to this file")
	flag.Parse()
	if *n < 1 || *saves < 1 || *clients < 1 || *killStudents < 1 || *rateRounds < 1 {
		return errors.New("-n, -saves, -c, -rate-rounds and -kill-students must be at least 1")
	}

	// Built first, so the build does not share the machine with a
	// measurement.
	bin, cleanup, err := assessdBinary(ctx, *assessdBin)
	if err != nil {
		return err
	}
	defer cleanup()

	env, err := benchenv.Start(ctx, "assessd_benchexamday")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Close()) }()
	a, err := env.StartApp(ctx, "http://127.0.0.1")
	if err != nil {
		return err
	}
	ours, stopOurs, err := benchload.Listen(a.Handler)
	if err != nil {
		return err
	}
	defer stopOurs()
	setupStart := time.Now()
	s, err := seed(ctx, a, ours, *n, *saves, *clients)
	if err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, env.URL)
	if err != nil {
		return err
	}
	defer pool.Close()
	base, stopBase, err := benchload.Listen(baseline(pool, s.orgID))
	if err != nil {
		return err
	}
	defer stopBase()
	owner, err := pgx.Connect(ctx, env.URL)
	if err != nil {
		return err
	}
	defer owner.Close(ctx)

	fmt.Printf("exam day: %d students in %d classes of %d, given one exam (%d numeric questions) by one assignment per %d classes,\n"+
		"each student with their own API key, %d at once, over HTTP on loopback (seeded in %.1f s). All start an attempt,\n"+
		"then all save each question once (without an Idempotency-Key, as the embed page saves), then all submit.\n"+
		"Quotas: the organization's is raised out of reach (benchenv.Unthrottled); each student's own (%d a minute) applies\n"+
		"as in production, and a 429 fails the run. No Temporal runs: the deadline workflows and the grading wait in the\n"+
		"outbox, neither on a save's path.\n",
		*n, len(s.classes), classSize, *saves, delivery.MaxAssignees, *clients, time.Since(setupStart).Seconds(), tenancy.StudentRequestsPerMinute)

	x := newExam(s, *clients)
	started, err := x.phase("start", func(st *student, took func(time.Duration)) error { return x.start(ours, st, took) })
	if err != nil {
		return err
	}
	fmt.Printf("\n%d attempts started, %.0f a second (p99 %.0f ms)\n\n", *n, started.RPS, benchload.Ms(started.P99))

	benchload.PrintHeader()
	bare, err := x.phase("baseline", func(st *student, took func(time.Duration)) error { return x.saveAll(base, st, "", took) })
	if err != nil {
		return err
	}
	bare.Print(1, "baseline")
	// assessd saves into the same rows, from nothing, as the baseline did.
	if _, err := owner.Exec(ctx, `DELETE FROM attempt_responses`); err != nil {
		return err
	}
	if _, err := owner.Exec(ctx, `VACUUM ANALYZE attempt_responses`); err != nil {
		return err
	}
	var stopProfile func()
	if *cpuProfile != "" {
		if stopProfile, err = benchload.StartCPUProfile(*cpuProfile); err != nil {
			return err
		}
	}
	mine, err := x.phase("assessd", func(st *student, took func(time.Duration)) error { return x.saveAll(ours, st, st.key, took) })
	if stopProfile != nil {
		stopProfile()
	}
	if err != nil {
		return err
	}
	mine.Print(1, "assessd")
	ratio := mine.RPS / bare.RPS
	fmt.Printf("\nCPU per save: assessd %d µs in this process (server and load generator) + %d µs in PostgreSQL, baseline %d + %d µs\n",
		mine.ProcessCPU.Microseconds(), mine.PostgresCPU.Microseconds(), bare.ProcessCPU.Microseconds(), bare.PostgresCPU.Microseconds())

	keyedMine, keyedBare, err := x.keyedSaves(base, ours, *keyedD, *keyedProfile)
	if err != nil {
		return err
	}
	keyedRatio := keyedMine.RPS / keyedBare.RPS

	rate := mine.RPS / 2
	p99, baseP99, err := x.atRate(base, ours, rate, *rateRounds, *rateD)
	if err != nil {
		return err
	}

	submitted, err := x.phase("submit", func(st *student, took func(time.Duration)) error { return x.submit(ours, st, took) })
	if err != nil {
		return err
	}
	fmt.Printf("\n%d attempts submitted (each with its %d responses, scored by rules), %.0f a second (p99 %.0f ms)\n",
		*n, *saves, submitted.RPS, benchload.Ms(submitted.P99))

	k, err := killTest(ctx, a, ours, env.URL, bin, s, killOptions{students: *killStudents, d: *killD, every: *killEvery})
	if err != nil {
		return err
	}

	fmt.Printf("\n%-66s %10s %10s\n", "measure", "measured", "target")
	row := func(name, measured, target string, ok bool) {
		mark := "ok"
		if !ok {
			mark = "MISSED"
		}
		fmt.Printf("%-66s %10s %10s %s\n", name, measured, target, mark)
	}
	row(fmt.Sprintf("exam day: saves/s, assessd/baseline (%.0f / %.0f)", mine.RPS, bare.RPS), fmt.Sprintf("%.2f", ratio),
		fmt.Sprintf(">= %.1f", targetRatio), ratio >= targetRatio)
	row(fmt.Sprintf("  the same with an Idempotency-Key per save (%.0f / %.0f)", keyedMine.RPS, keyedBare.RPS), fmt.Sprintf("%.2f", keyedRatio),
		fmt.Sprintf(">= %.1f", targetRatio), keyedRatio >= targetRatio)
	row(fmt.Sprintf("save p99 at %.0f saves/s, half the maximum (baseline %.1f ms)", rate, benchload.Ms(baseP99)),
		fmt.Sprintf("%.1f ms", benchload.Ms(p99)), fmt.Sprintf("< %.0f ms", benchload.Ms(targetP99)), p99 < targetP99)
	row(fmt.Sprintf("acknowledged saves lost (%d acknowledged, %d resent)", k.acknowledged, k.resent),
		fmt.Sprintf("%d", k.lost), "0", k.lost == 0)
	if k.lost > 0 {
		return fmt.Errorf("%d acknowledged saves lost", k.lost)
	}
	return nil
}
