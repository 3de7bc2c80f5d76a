// Command benchhttp measures two routes through the whole assessd stack
// against minimal baseline handlers doing the same database work with
// nothing around it, in the same run and on the same database, and prints
// both and their ratio: authenticated GET /users/{id} against the same
// single-row pgx query, and POST /exams/{examId}/results (ten questions
// scored by rules) against a bare insert of the same rows. Both rows also
// measure the baseline's work behind the API's transport alone (Vanguard
// and Connect as assessd configures them), the ceiling of any handler on
// that stack; the GET row also measures the baseline's query in the tenant
// scope alone, the ceiling of any handler with the prescribed tenancy, and
// then, in process, one layer at a time (transport, tenant scope, the
// whole server), to show which layer a difference is in.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/assessd/assessd/api"
	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/benchenv"
	"github.com/assessd/assessd/internal/testkit/benchload"
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
	rounds := flag.Int("rounds", 3, "rounds; each measures the baseline and assessd, taking turns at going first")
	warmup := flag.Duration("warmup", 2*time.Second, "warm-up per target")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the last assessd GET run to this file")
	postProfile := flag.String("post-cpuprofile", "", "write a CPU profile of the last assessd POST run to this file")
	submitters := flag.Int("submitters", 16, "concurrent clients submitting results")
	flag.Parse()

	env, err := benchenv.Start(ctx, "assessd_bench")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Close()) }()
	a, err := env.StartApp(ctx, "http://127.0.0.1")
	if err != nil {
		return err
	}
	fx, err := seed(ctx, a)
	if err != nil {
		return err
	}
	ours, stopOurs, err := benchload.Listen(a.Handler)
	if err != nil {
		return err
	}
	defer stopOurs()

	pool, err := pgxpool.New(ctx, env.URL)
	if err != nil {
		return err
	}
	defer pool.Close()
	base, stopBase, err := benchload.Listen(baseline(pool, fx))
	if err != nil {
		return err
	}
	defer stopBase()

	fmt.Printf("GET /users/{id}, %d concurrent clients, %d rounds of %s per target, loopback\n\n", *concurrency, *rounds, *duration)
	get := func(url string) func() *http.Request {
		return func() *http.Request {
			req, _ := http.NewRequest(http.MethodGet, url+"/users/"+fx.userID, nil)
			return req
		}
	}
	c := comparison{clients: *concurrency, rounds: *rounds, warmup: *warmup, d: *duration, key: fx.key, profile: *cpuProfile}
	ratio, last, err := c.run(get(base), get(ours), "assessd")
	if err != nil {
		return err
	}
	fmt.Printf("throughput ratio assessd/baseline, median of %d rounds: %.2f; target >= 0.85\n", *rounds, ratio)
	fmt.Printf("assessd p99 in the last round: %.2f ms; target < 5 ms\n", benchload.Ms(last.P99))

	// The ceilings of two layers the architecture prescribes, each alone:
	// the baseline's work behind Vanguard and Connect as the API configures
	// them, and the baseline's handler with its query in the tenant scope.
	tr, err := transport(pool, fx)
	if err != nil {
		return err
	}
	bare := comparison{clients: *concurrency, rounds: *rounds, warmup: *warmup, d: *duration}
	stack, stopStack, err := bare.ceiling(get(base), get, tr, "transport",
		"behind the API's transport alone (Vanguard and Connect with assessd's codecs and interceptors;\n"+
			"no middleware, authentication, quota or tenant scope)", "on this stack")
	if err != nil {
		return err
	}
	defer stopStack()
	_, stopScope, err := bare.ceiling(get(base), get, scopeAlone(env.DB, fx), "scope",
		"in the tenant scope alone (the baseline's handler with the role and organization set in the\n"+
			"statement's transaction, under row-level security; no transport, middleware, authentication or quota)", "with this tenancy")
	if err != nil {
		return err
	}
	defer stopScope()
	if err := layers(ctx, *rounds, fx, env.DB, baseline(pool, fx), tr, a.Handler); err != nil {
		return err
	}
	floor := func() *http.Request {
		req, _ := http.NewRequest(http.MethodGet, base+"/floor", nil)
		return req
	}
	if err := c.atRate(floor, get(base), get(stack), get(ours), last.RPS/2); err != nil {
		return err
	}

	fmt.Printf("\nPOST /exams/{examId}/results (%d questions scored by rules), %d concurrent clients, %d rounds of %s per target\n\n",
		len(fx.questionIDs), *submitters, *rounds, *duration)
	body := fx.submission()
	post := func(url string) func() *http.Request {
		return func() *http.Request {
			req, _ := http.NewRequest(http.MethodPost, url+"/exams/"+fx.examID+"/results", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			return req
		}
	}
	c.clients, c.profile = *submitters, *postProfile
	if ratio, _, err = c.run(post(base), post(ours), "assessd"); err != nil {
		return err
	}
	fmt.Printf("throughput ratio assessd/bare insert, median of %d rounds: %.2f; target >= 0.6\n", *rounds, ratio)

	fmt.Printf("\nthe same insert behind the API's transport alone, against the bare insert\n\n")
	c.key, c.profile = "", ""
	if ratio, _, err = c.run(post(base), post(stack), "transport"); err != nil {
		return err
	}
	fmt.Printf("throughput ratio transport/bare insert, median of %d rounds: %.2f: the most any handler on this stack reaches\n", *rounds, ratio)
	return nil
}

// ceiling serves h, one prescribed layer around the baseline's work with
// nothing else of assessd, and measures it against the baseline's
// requests; what says what h is, reaches what it is the ceiling of. It
// returns h's URL, served until stop is called.
func (c comparison) ceiling(base func() *http.Request, at func(url string) func() *http.Request, h http.Handler, name, what, reaches string) (url string, stop func(), err error) {
	url, stop, err = benchload.Listen(h)
	if err != nil {
		return "", nil, err
	}
	fmt.Printf("\nthe same query %s, against the baseline\n\n", what)
	ratio, _, err := c.run(base, at(url), name)
	if err != nil {
		stop()
		return "", nil, err
	}
	fmt.Printf("throughput ratio %s/baseline, median of %d rounds: %.2f: the most any handler %s reaches\n", name, c.rounds, ratio, reaches)
	return url, stop, nil
}

// comparison measures a baseline and assessd in alternating rounds.
type comparison struct {
	clients, rounds int
	warmup, d       time.Duration
	key             string
	// profile, when set, is where the CPU profile of the last assessd run
	// goes.
	profile string
}

// run prints each round and returns the median throughput ratio and the
// last result of ours, which the rows call name.
func (c comparison) run(base, ours func() *http.Request, name string) (float64, benchload.Result, error) {
	benchload.PrintHeader()
	var ratios []float64
	var ourRes, baseRes benchload.Result
	for round := 1; round <= c.rounds; round++ {
		runBase := func() {
			baseRes = c.load(base, "")
			baseRes.Print(round, "baseline")
		}
		runOurs := func() error {
			if round == c.rounds && c.profile != "" {
				stop, err := benchload.StartCPUProfile(c.profile)
				if err != nil {
					return err
				}
				defer stop()
			}
			ourRes = c.load(ours, c.key)
			ourRes.Print(round, name)
			return nil
		}
		// Every other round assessd goes first, so neither side always
		// meets what the other leaves behind (its rows to vacuum, a
		// checkpoint it started).
		if round%2 == 1 {
			runBase()
		}
		if err := runOurs(); err != nil {
			return 0, ourRes, err
		}
		if round%2 == 0 {
			runBase()
		}
		ratios = append(ratios, ourRes.RPS/baseRes.RPS)
		if ourRes.Errors > 0 || baseRes.Errors > 0 {
			return 0, ourRes, errors.New("requests failed during the benchmark")
		}
	}
	// Where the difference is: the Go process (load generator included, the
	// same for both) or the database.
	fmt.Printf("\nCPU per request in the last round: %s %d µs in this process + %d µs in PostgreSQL, baseline %d + %d µs\n",
		name, ourRes.ProcessCPU.Microseconds(), ourRes.PostgresCPU.Microseconds(), baseRes.ProcessCPU.Microseconds(), baseRes.PostgresCPU.Microseconds())
	slices.Sort(ratios)
	return ratios[len(ratios)/2], ourRes, nil
}

// atRate offers the baseline and assessd the same fixed rate over the
// comparison's clients: with 64 clients sending back to back, the p99 of a
// saturated server is about clients/throughput whatever the server does,
// so latency is also measured below saturation. One window's p99 rests on
// its few slowest requests, so it reports the median of the rounds' p99s.
// Two more targets take the same rate: floor answers with a bare SELECT 1,
// the tail this host gives any Go handler that waits on PostgreSQL, which
// has varied more from machine to machine than either target has from
// change to change; transport is the baseline's query behind the API's
// transport alone, the tail of the stack before the product adds to it.
func (c comparison) atRate(floor, base, transport, ours func() *http.Request, rate float64) error {
	fmt.Printf("\nthe same at a fixed %.0f requests/s (half of assessd's last throughput), over %d connections, %d rounds\n\n", rate, c.clients, c.rounds)
	benchload.PrintHeader()
	targets := []struct {
		name       string
		newRequest func() *http.Request
		bearer     string
	}{{"baseline", base, ""}, {"floor", floor, ""}, {"transport", transport, ""}, {"assessd", ours, c.key}}
	p99s := make([][]time.Duration, len(targets))
	for round := 1; round <= c.rounds; round++ {
		for i, target := range targets {
			res := benchload.RunAtRate(c.clients, rate, c.warmup, c.d, func(hc *http.Client, _ int) bool {
				return benchload.Do(hc, target.newRequest(), target.bearer)
			})
			res.Print(round, target.name)
			if res.Errors > 0 {
				return errors.New("requests failed during the benchmark")
			}
			p99s[i] = append(p99s[i], res.P99)
		}
	}
	median := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return benchload.Ms(ds[len(ds)/2])
	}
	fmt.Printf("\nassessd p99 at %.0f requests/s, median of %d rounds: %.2f ms (baseline %.2f ms, SELECT 1 floor %.2f ms, transport %.2f ms); target < 5 ms\n",
		rate, c.rounds, median(p99s[3]), median(p99s[0]), median(p99s[1]), median(p99s[2]))
	return nil
}

// load sends newRequest's requests with bearer from the comparison's clients.
func (c comparison) load(newRequest func() *http.Request, bearer string) benchload.Result {
	return benchload.Run(c.clients, c.warmup, c.d, func(hc *http.Client, _ int) bool {
		return benchload.Do(hc, newRequest(), bearer)
	})
}

// fixture is what seed creates: an admin with an API key, a student and
// an exam of true/false questions.
type fixture struct {
	orgID, userID, key, studentID, examID string
	questionIDs                           []string
}

func seed(ctx context.Context, a *app.App) (fixture, error) {
	org, err := a.Tenancy.CreateOrg(ctx, tenancy.NewOrg{Name: "Bench", Country: "US", Plan: tenancy.PlanPro})
	if err != nil {
		return fixture{}, err
	}
	fx := fixture{orgID: org.ID}
	ctx = tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	u, err := a.Tenancy.CreateUser(ctx, tenancy.NewUser{Email: "bench@example.com", Name: "Bench", Role: tenancy.RoleAdmin,
		Metadata: tenancy.MetadataPatch{"grade": "7", "team": "red"}})
	if err != nil {
		return fx, err
	}
	fx.userID = u.ID
	if _, fx.key, err = a.Tenancy.CreateAPIKey(ctx, u.ID, "bench"); err != nil {
		return fx, err
	}
	student, err := a.Tenancy.CreateUser(ctx, tenancy.NewUser{Email: "student@example.com", Name: "Student", Role: tenancy.RoleStudent})
	if err != nil {
		return fx, err
	}
	fx.studentID = student.ID
	exam, err := a.Assessment.CreateExam(ctx, assessment.NewExam{Name: "Bench exam", Language: "en"})
	if err != nil {
		return fx, err
	}
	fx.examID = exam.ID
	for i := range 10 {
		q, err := a.Assessment.CreateQuestion(ctx, exam.ID, assessment.NewQuestion{Type: assessment.TypeTrueFalse,
			Prompt: fmt.Sprintf("Statement number %d is true.", i+1), Config: map[string]any{"correct": true}, Points: 1})
		if err != nil {
			return fx, err
		}
		fx.questionIDs = append(fx.questionIDs, q.ID)
	}
	return fx, nil
}

// submission is the body both targets are sent: every question answered,
// every other one correctly.
func (fx fixture) submission() []byte {
	answers := make([]map[string]any, len(fx.questionIDs))
	for i, id := range fx.questionIDs {
		answers[i] = map[string]any{"questionId": id, "value": i%2 == 0}
	}
	b, _ := json.Marshal(map[string]any{"userId": fx.studentID, "answers": answers})
	return b
}

// bareUserQuery is the baseline's one query for GET /users/{id}.
const bareUserQuery = `SELECT id, org_id, email, name, role, metadata, created_at, updated_at FROM users WHERE id = $1`

// baseline answers GET /users/{id} with one pgx query and encoding/json,
// and POST /exams/{examId}/results by inserting the result and its
// answers (the same rows assessd writes, scored by comparing with true) in
// one batch: no authentication, tenancy, transcoding, validation, audit,
// logging or metrics. GET /floor answers with SELECT 1 alone.
func baseline(pool *pgxpool.Pool, fx fixture) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /floor", func(w http.ResponseWriter, r *http.Request) {
		var one int
		if err := pool.QueryRow(r.Context(), `SELECT 1`).Scan(&one); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("1\n"))
	})
	mux.Handle("GET /users/{id}", userHandler(func(ctx context.Context, id string, u *bareUser) error {
		return pool.QueryRow(ctx, bareUserQuery, id).Scan(u.fields()...)
	}))
	mux.HandleFunc("POST /exams/{examId}/results", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			UserID  string `json:"userId"`
			Answers []struct {
				QuestionID string          `json:"questionId"`
				Value      json.RawMessage `json:"value"`
			} `json:"answers"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		qids, values := make([]string, len(in.Answers)), make([]string, len(in.Answers))
		for i, a := range in.Answers {
			qids[i], values[i] = a.QuestionID, string(a.Value)
		}
		id, total, err := bareInsert(r.Context(), pool, fx.orgID, r.PathValue("examId"), in.UserID, qids, values)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "status": "graded", "score": total})
	})
	return mux
}

// bareUser is a user as the baseline handlers answer it, with
// encoding/json.
type bareUser struct {
	ID        string         `json:"id"`
	OrgID     string         `json:"orgId"`
	Email     string         `json:"email"`
	Name      string         `json:"name"`
	Role      string         `json:"role"`
	Metadata  map[string]any `json:"metadata"`
	CreatedAt time.Time      `json:"createdAt"`
	UpdatedAt time.Time      `json:"updatedAt"`
}

// fields are the scan targets of bareUserQuery's columns.
func (u *bareUser) fields() []any {
	return []any{&u.ID, &u.OrgID, &u.Email, &u.Name, &u.Role, &u.Metadata, &u.CreatedAt, &u.UpdatedAt}
}

// userHandler answers GET /users/{id} with the user load reads.
func userHandler(load func(ctx context.Context, id string, u *bareUser) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var u bareUser
		if err := load(r.Context(), r.PathValue("id"), &u); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(u)
	})
}

// scopedUserQuery is bareUserQuery as the product runs it: in the tenant
// scope, under row-level security.
const scopedUserQuery = `SELECT id, org_id, email, name, role, metadata, created_at, updated_at
	FROM users WHERE org_id = app_org_id() AND id = $1`

// scopeAlone is the baseline's GET handler with its query in the tenant
// scope the architecture prescribes (store.DB.Q: the role and organization
// set in the statement's own transaction, decision 0040), and nothing else
// of assessd: no transport, authentication, quota or middleware.
func scopeAlone(db *store.DB, fx fixture) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /users/{id}", userHandler(func(ctx context.Context, id string, u *bareUser) error {
		ctx = store.WithOrg(ctx, fx.orgID)
		return db.Q(ctx).QueryRow(ctx, scopedUserQuery, id).Scan(u.fields()...)
	}))
	return mux
}

// bareInsert writes a result and its answers (JSON values, scored by
// comparing with true) in one batch, and returns the result's id and score.
func bareInsert(ctx context.Context, pool *pgxpool.Pool, orgID, examID, userID string, qids, values []string) (string, float64, error) {
	id := ids.New(ids.Result)
	scores := make([]float64, len(qids))
	var total float64
	for i, v := range values {
		if v == "true" {
			scores[i], total = 1, total+1
		}
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO results (id, org_id, exam_id, user_id, status, score, max_score, graded_at)
		VALUES ($1, $2, $3, $4, 'graded', $5, $6, now())`, id, orgID, examID, userID, total, float64(len(qids)))
	b.Queue(`INSERT INTO result_answers (result_id, question_id, org_id, exam_id, position, value, status, score, max_score, graded_at)
		SELECT $1, a.qid, $2, $3, a.pos, a.val::jsonb, 'graded', a.score, 1, now()
		  FROM unnest($4::text[], $5::text[], $6::float8[]) WITH ORDINALITY AS a(qid, val, score, pos)`,
		id, orgID, examID, qids, values, scores)
	return id, total, pool.SendBatch(ctx, b).Close()
}

// transport is the baseline's work behind the API's transport alone: its
// query for a user, its insert for a submission (the answers' values
// encoded back to JSON, as assessd stores them).
func transport(pool *pgxpool.Pool, fx fixture) (http.Handler, error) {
	return api.NewTransport(api.Transport{
		GetUser: func(ctx context.Context, id string) (tenancy.User, error) {
			var u tenancy.User
			err := pool.QueryRow(ctx, bareUserQuery, id).Scan(&u.ID, &u.OrgID, &u.Email, &u.Name, &u.Role, &u.Metadata, &u.CreatedAt, &u.UpdatedAt)
			return u, err
		},
		SubmitResult: func(ctx context.Context, examID string, in assessment.NewResult) (assessment.Result, error) {
			qids, values := make([]string, len(in.Answers)), make([]string, len(in.Answers))
			for i, a := range in.Answers {
				v, err := json.Marshal(a.Value)
				if err != nil {
					return assessment.Result{}, err
				}
				qids[i], values[i] = a.QuestionID, string(v)
			}
			id, total, err := bareInsert(ctx, pool, fx.orgID, examID, in.UserID, qids, values)
			return assessment.Result{ID: id, ExamID: examID, UserID: in.UserID, Status: assessment.StatusGraded,
				Score: total, MaxScore: float64(len(qids))}, err
		},
	})
}
