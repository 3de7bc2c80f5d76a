package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/classes"
	"github.com/assessd/assessd/internal/delivery"
	"github.com/assessd/assessd/internal/testkit/benchload"
	"github.com/assessd/assessd/tenancy"
)

// classSize is how many students a class of the seeded school has.
const classSize = 25

// school is the seeded organization: an admin's API key, an exam of
// numeric questions, and students in classes that assignments name.
type school struct {
	orgID, staffKey, examID string
	questions               int
	classes                 []string
	students                []*student
}

// student is one student taking the exam with their own key.
type student struct {
	key, assignmentID string
	// attemptID and questionIDs (in the attempt's order) are the started
	// attempt's.
	attemptID   string
	questionIDs []string
}

// seed creates the school: n students with their own API keys in classes
// of classSize, given the exam by assignments (each names at most
// delivery.MaxAssignees classes), made through the API as staff.
func seed(ctx context.Context, a *app.App, base string, n, questions, clients int) (*school, error) {
	org, err := a.Tenancy.CreateOrg(ctx, tenancy.NewOrg{Name: "District", Country: "US", Plan: tenancy.PlanEnterprise})
	if err != nil {
		return nil, err
	}
	sys := tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	admin, err := a.Tenancy.CreateUser(sys, tenancy.NewUser{Email: "admin@district.test", Name: "Admin", Role: tenancy.RoleAdmin})
	if err != nil {
		return nil, err
	}
	s := &school{orgID: org.ID, questions: questions}
	if _, s.staffKey, err = a.Tenancy.CreateAPIKey(sys, admin.ID, "bench"); err != nil {
		return nil, err
	}
	exam, err := a.Assessment.CreateExam(sys, assessment.NewExam{Name: "Fractions", Language: "en", DurationMinutes: 45})
	if err != nil {
		return nil, err
	}
	s.examID = exam.ID
	for i := range questions {
		if _, err := a.Assessment.CreateQuestion(sys, exam.ID, assessment.NewQuestion{Type: assessment.TypeNumeric,
			Prompt: fmt.Sprintf("%d/4 as a decimal?", i+1), Points: 1, Config: map[string]any{"correct": float64(i+1) / 4}}); err != nil {
			return nil, err
		}
	}
	if s.students, err = s.enroll(sys, a, base, "s", n, clients); err != nil {
		return nil, err
	}
	return s, nil
}

// enroll adds n students (emails prefix<i>@district.test) with their own
// API keys, in new classes given the exam by new assignments, and returns
// them.
func (s *school) enroll(sys context.Context, a *app.App, base, prefix string, n, clients int) ([]*student, error) {
	students := make([]*student, n)
	userIDs := make([]string, n)
	if err := each(n, clients, func(i int) error {
		u, err := a.Tenancy.CreateUser(sys, tenancy.NewUser{Email: fmt.Sprintf("%s%d@district.test", prefix, i), Name: "Student", Role: tenancy.RoleStudent})
		if err != nil {
			return err
		}
		students[i], userIDs[i] = &student{}, u.ID
		_, students[i].key, err = a.Tenancy.CreateAPIKey(sys, u.ID, "exam")
		return err
	}); err != nil {
		return nil, err
	}
	classIDs := make([]string, (n+classSize-1)/classSize)
	for c := range classIDs {
		class, err := a.Classes.Create(sys, classes.NewClass{Name: fmt.Sprintf("%s class %d", prefix, c+1)})
		if err != nil {
			return nil, err
		}
		classIDs[c] = class.ID
	}
	if err := each(n, clients, func(i int) error {
		_, err := a.Classes.AddMember(sys, classIDs[i/classSize], classes.NewMember{UserID: userIDs[i], Role: classes.RoleStudent})
		return err
	}); err != nil {
		return nil, err
	}
	s.classes = append(s.classes, classIDs...)
	now := time.Now()
	for from := 0; from < len(classIDs); from += delivery.MaxAssignees {
		named := classIDs[from:min(from+delivery.MaxAssignees, len(classIDs))]
		var asg struct{ ID string }
		if err := call(http.DefaultClient, http.MethodPost, base+"/assignments", s.staffKey, map[string]any{"examId": s.examID,
			"classIds": named, "opensAt": now.Add(-time.Minute).Format(time.RFC3339), "closesAt": now.Add(3 * time.Hour).Format(time.RFC3339),
			"timeLimitMinutes": 60}, &asg); err != nil {
			return nil, err
		}
		for i := from * classSize; i < min((from+len(named))*classSize, n); i++ {
			students[i].assignmentID = asg.ID
		}
	}
	return students, nil
}

// exam drives the school's students over HTTP, clients at a time.
type exam struct {
	*school
	clients int
	hc      *http.Client
}

func newExam(s *school, clients int) *exam {
	return &exam{school: s, clients: clients,
		hc: &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * clients, MaxIdleConnsPerHost: clients}, Timeout: time.Minute}}
}

// phase runs step for every student, the exam's clients at a time, each
// step timing its requests with took; it returns the requests' rate over
// the phase, their latencies and the CPU each cost.
func (x *exam) phase(name string, step func(st *student, took func(time.Duration)) error) (benchload.Result, error) {
	var mu sync.Mutex
	var all []time.Duration
	took := func(d time.Duration) {
		mu.Lock()
		all = append(all, d)
		mu.Unlock()
	}
	began, before := time.Now(), benchload.ReadUsage()
	err := each(len(x.students), x.clients, func(i int) error { return step(x.students[i], took) })
	elapsed, cpu := time.Since(began), benchload.ReadUsage().Per(before, len(all))
	if err != nil {
		return benchload.Result{}, fmt.Errorf("%s: %w", name, err)
	}
	slices.Sort(all)
	return benchload.Result{RPS: float64(len(all)) / elapsed.Seconds(), P50: all[len(all)/2], P99: all[len(all)*99/100],
		ProcessCPU: cpu.Process, PostgresCPU: cpu.Postgres}, nil
}

// timed calls fn and reports its duration to took.
func timed(took func(time.Duration), fn func() error) error {
	began := time.Now()
	err := fn()
	took(time.Since(began))
	return err
}

// start starts st's attempt with st's own key.
func (x *exam) start(base string, st *student, took func(time.Duration)) error {
	var at struct {
		ID        string
		Questions []struct{ ID string }
	}
	if err := timed(took, func() error {
		return call(x.hc, http.MethodPost, base+"/assignments/"+st.assignmentID+"/attempts", st.key, map[string]any{}, &at)
	}); err != nil {
		return err
	}
	if len(at.Questions) != x.questions {
		return fmt.Errorf("attempt %s has %d questions, want %d", at.ID, len(at.Questions), x.questions)
	}
	st.attemptID = at.ID
	for _, q := range at.Questions {
		st.questionIDs = append(st.questionIDs, q.ID)
	}
	return nil
}

// saveAll saves st's response to each question in the attempt's order at
// base, with bearer when not "".
func (x *exam) saveAll(base string, st *student, bearer string, took func(time.Duration)) error {
	for i, q := range st.questionIDs {
		var r struct{ Revision int }
		if err := timed(took, func() error {
			return call(x.hc, http.MethodPut, base+"/attempts/"+st.attemptID+"/responses/"+q, bearer, map[string]any{"value": i + 1}, &r)
		}); err != nil {
			return err
		}
		if r.Revision != 1 {
			return fmt.Errorf("the first save of %s/%s answered revision %d", st.attemptID, q, r.Revision)
		}
	}
	return nil
}

// submit submits st's attempt and checks that it holds every response.
func (x *exam) submit(base string, st *student, took func(time.Duration)) error {
	var at struct {
		Status, ResultID string
		Responses        []json.RawMessage
	}
	if err := timed(took, func() error {
		return call(x.hc, http.MethodPost, base+"/attempts/"+st.attemptID+"/submit", st.key, map[string]any{}, &at)
	}); err != nil {
		return err
	}
	if at.Status != delivery.StatusSubmitted || at.ResultID == "" || len(at.Responses) != x.questions {
		return fmt.Errorf("attempt %s submitted as %q with result %q and %d responses", st.attemptID, at.Status, at.ResultID, len(at.Responses))
	}
	return nil
}

// resave is a load generator's request: a save of the next student's next
// question (students and questions taken in turn, so each updates a saved
// row) at url, with the student's key when own, and with an
// Idempotency-Key of its own when keyed.
func (x *exam) resave(next *atomic.Int64, url string, own, keyed bool) func(hc *http.Client, _ int) bool {
	return func(hc *http.Client, _ int) bool {
		k := int(next.Add(1))
		st := x.students[k%len(x.students)]
		q := st.questionIDs[(k/len(x.students))%len(st.questionIDs)]
		key, bearer := "", ""
		if keyed {
			key = rand.Text()
		}
		if own {
			bearer = st.key
		}
		req, err := newRequest(http.MethodPut, url+"/attempts/"+st.attemptID+"/responses/"+q, key, map[string]any{"value": k})
		return err == nil && benchload.Do(hc, req, bearer)
	}
}

// keyedSaves measures saves that each carry an Idempotency-Key of their
// own, as the SDK sends them, back to back for d after a second's
// warm-up, against the baseline's (which ignores the header); it returns
// assessd's result and the baseline's.
func (x *exam) keyedSaves(base, ours string, d time.Duration, profile string) (mine, bare benchload.Result, err error) {
	fmt.Printf("\nthe same students saving again, each save with an Idempotency-Key of its own (the SDK's default), %d clients\n"+
		"back to back for %s\n\n", x.clients, d)
	benchload.PrintHeader()
	var next atomic.Int64
	bare = benchload.Run(x.clients, time.Second, d, x.resave(&next, base, false, true))
	bare.Print(1, "baseline")
	if profile != "" {
		stop, err := benchload.StartCPUProfile(profile)
		if err != nil {
			return mine, bare, err
		}
		defer stop()
	}
	mine = benchload.Run(x.clients, time.Second, d, x.resave(&next, ours, true, true))
	mine.Print(1, "assessd")
	if mine.Errors > 0 || bare.Errors > 0 {
		return mine, bare, errors.New("saves failed during the benchmark")
	}
	fmt.Printf("\nCPU per save: assessd %d µs in this process + %d µs in PostgreSQL, baseline %d + %d µs\n",
		mine.ProcessCPU.Microseconds(), mine.PostgresCPU.Microseconds(), bare.ProcessCPU.Microseconds(), bare.PostgresCPU.Microseconds())
	return mine, bare, nil
}

// atRate offers the baseline and assessd rate saves a second for rounds,
// and returns the median of assessd's p99s and of the baseline's.
func (x *exam) atRate(base, ours string, rate float64, rounds int, d time.Duration) (p99, baseP99 time.Duration, err error) {
	fmt.Printf("\nsaves at a fixed %.0f a second (half of assessd's), over %d connections, %d rounds of %s\n\n", rate, x.clients, rounds, d)
	benchload.PrintHeader()
	var next atomic.Int64
	targets := []struct {
		name, url string
		own       bool
	}{{"baseline", base, false}, {"assessd", ours, true}}
	p99s := make([][]time.Duration, len(targets))
	for round := 1; round <= rounds; round++ {
		for i, t := range targets {
			res := benchload.RunAtRate(x.clients, rate, time.Second, d, x.resave(&next, t.url, t.own, false))
			res.Print(round, t.name)
			if res.Errors > 0 {
				return 0, 0, fmt.Errorf("%d saves failed at the fixed rate", res.Errors)
			}
			p99s[i] = append(p99s[i], res.P99)
		}
	}
	median := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	return median(p99s[1]), median(p99s[0]), nil
}

// newRequest is a JSON request with an Idempotency-Key when key is not "".
func newRequest(method, url, key string, body any) (*http.Request, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(method, url, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	return req, nil
}

// call sends a JSON request with bearer (when not "") and decodes a 200's
// body into out (when not nil); any other answer is an error.
func call(hc *http.Client, method, url, bearer string, body, out any) error {
	req, err := newRequest(method, url, "", body)
	if err != nil {
		return err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", method, url, res.StatusCode, raw)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// each runs fn for 0..n-1, clients at a time, and returns the first
// error.
func each(n, clients int, fn func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(clients)
	for i := range n {
		g.Go(func() error { return fn(i) })
	}
	return g.Wait()
}
