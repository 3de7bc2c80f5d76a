// Command benchsummary measures GET /exams/{examId}/results/summary through
// the whole assessd HTTP stack on an exam with 100,000 graded results (five
// questions each, so 500,000 answers), seeded in a fresh database, and
// compares it in the same run with a bare pgx baseline on the same data:
// SELECT count(*), avg(score) FROM results WHERE exam_id = $1.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/testkit/benchenv"
	"github.com/assessd/assessd/tenancy"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "benchsummary:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) (err error) {
	results := flag.Int("results", 100_000, "results to seed")
	requests := flag.Int("n", 20, "measured requests per target")
	flag.Parse()
	env, err := benchenv.Start(ctx, "assessd_bench")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Close()) }()
	db, dbURL := env.DB, env.URL
	a, err := app.New(ctx, db, app.Config{BaseURL: "http://127.0.0.1", Logger: env.Logger})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: a.Handler, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	key, examID, err := setup(ctx, a)
	if err != nil {
		return err
	}
	owner, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	defer owner.Close()
	start := time.Now()
	if err := seed(ctx, owner, examID, *results); err != nil {
		return err
	}
	fmt.Printf("seeded %d results (%d answers) in %s\n", *results, *results*5, time.Since(start).Round(time.Millisecond))

	url := "http://" + ln.Addr().String() + "/exams/" + examID + "/results/summary"
	summary := func() error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		var body struct {
			Count int `json:"count"`
		}
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusOK || body.Count != *results {
			return fmt.Errorf("summary: status %d, count %d, %v", res.StatusCode, body.Count, err)
		}
		return nil
	}
	baseline := func() error {
		var n int
		var avg float64
		return owner.QueryRow(ctx, `SELECT count(*), avg(score) FROM results WHERE exam_id = $1`, examID).Scan(&n, &avg)
	}
	b, err := measure(baseline, *requests)
	if err != nil {
		return err
	}
	s, err := measure(summary, *requests)
	if err != nil {
		return err
	}
	fmt.Printf("%-44s median %8s  p95 %8s  min %8s  max %8s\n", "baseline SELECT count(*), avg(score)", b.median, b.p95, b.min, b.max)
	fmt.Printf("%-44s median %8s  p95 %8s  min %8s  max %8s\n", "GET /exams/{examId}/results/summary", s.median, s.p95, s.min, s.max)
	fmt.Printf("ratio (median summary / median baseline): %.2fx; target: summary median < 50 ms (aggregates kept on write)\n",
		float64(s.median)/float64(b.median))
	if s.p95 >= time.Second {
		return errors.New("the summary takes a second or more at this size")
	}
	return nil
}

// setup creates an organization, a teacher's API key and an exam with five
// questions.
func setup(ctx context.Context, a *app.App) (key, examID string, err error) {
	org, err := a.Tenancy.CreateOrg(ctx, tenancy.NewOrg{Name: "Bench school", Country: "US", Plan: "pro"})
	if err != nil {
		return "", "", err
	}
	ctx = tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	teacher, err := a.Tenancy.CreateUser(ctx, tenancy.NewUser{Email: "teacher@bench.test", Name: "Teacher", Role: tenancy.RoleTeacher})
	if err != nil {
		return "", "", err
	}
	if _, err := a.Tenancy.CreateUser(ctx, tenancy.NewUser{Email: "student@bench.test", Name: "Student", Role: tenancy.RoleStudent}); err != nil {
		return "", "", err
	}
	if _, key, err = a.Tenancy.CreateAPIKey(ctx, teacher.ID, "bench"); err != nil {
		return "", "", err
	}
	exam, err := a.Assessment.CreateExam(ctx, assessment.NewExam{Name: "Bench exam", Language: "en"})
	if err != nil {
		return "", "", err
	}
	for i := range 5 {
		if _, err := a.Assessment.CreateQuestion(ctx, exam.ID, assessment.NewQuestion{
			Type: assessment.TypeTrueFalse, Prompt: fmt.Sprintf("Statement number %d is true.", i+1),
			Config: map[string]any{"correct": true}, Points: float64(i + 1),
		}); err != nil {
			return "", "", err
		}
	}
	return key, exam.ID, nil
}

// seed inserts n graded results with deterministic pseudo-random answers
// (question j is answered correctly with probability 0.3 + 0.1 j), as the
// schema owner in two set-based statements.
func seed(ctx context.Context, owner *pgxpool.Pool, examID string, n int) error {
	_, err := owner.Exec(ctx, `
		WITH q AS (
		  SELECT id, position, points, org_id FROM questions WHERE exam_id = $1
		), a AS (
		  SELECT i, q.id AS qid, q.position, q.points, q.org_id,
		         (abs(hashtext(i::text || '/' || q.position)) % 100) < 30 + 10 * q.position AS correct
		    FROM generate_series(1, $2::int) AS i, q
		), ins AS (
		  INSERT INTO result_answers (result_id, question_id, org_id, exam_id, position, value, status, score, max_score, graded_at)
		  SELECT 'res_' || lpad(upper(to_hex(i)), 26, '0'), qid, org_id, $1, position,
		         to_jsonb(correct), 'graded', CASE WHEN correct THEN points ELSE 0 END, points, now()
		    FROM a
		)
		INSERT INTO results (id, org_id, exam_id, user_id, status, score, max_score, graded_at)
		SELECT 'res_' || lpad(upper(to_hex(i)), 26, '0'), min(org_id), $1,
		       (SELECT id FROM users WHERE role = 'student' LIMIT 1), 'graded',
		       sum(CASE WHEN correct THEN points ELSE 0 END), sum(points), now()
		  FROM a GROUP BY i`, examID, n)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	_, err = owner.Exec(ctx, `ANALYZE results; ANALYZE result_answers`)
	return err
}

type stats struct{ median, p95, min, max time.Duration }

// measure runs fn twice to warm up, then n times, and reports latencies.
func measure(fn func() error, n int) (stats, error) {
	for range 2 {
		if err := fn(); err != nil {
			return stats{}, err
		}
	}
	d := make([]time.Duration, n)
	for i := range d {
		start := time.Now()
		if err := fn(); err != nil {
			return stats{}, err
		}
		d[i] = time.Since(start)
	}
	slices.Sort(d)
	r := func(x time.Duration) time.Duration { return x.Round(10 * time.Microsecond) }
	return stats{median: r(d[n/2]), p95: r(d[min(n*95/100, n-1)]), min: r(d[0]), max: r(d[n-1])}, nil
}
