package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/tenancy"
)

// killOptions shape the kill test.
type killOptions struct {
	students int
	d, every time.Duration
}

// killResult counts the kill test's saves.
type killResult struct {
	acknowledged, resent, lost int
}

// assessdBinary returns the assessd binary the kill test runs: given, or
// built from this module into a temporary directory that cleanup removes.
func assessdBinary(ctx context.Context, given string) (path string, cleanup func(), err error) {
	if given != "" {
		return given, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "benchexamday")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	path = filepath.Join(dir, "assessd")
	build := exec.CommandContext(ctx, "go", "build", "-o", path, "github.com/assessd/assessd/cmd/assessd") //nolint:gosec // G204: a path in our own temporary directory
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	began := time.Now()
	if err := build.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("build assessd for the kill test: %w", err)
	}
	fmt.Printf("built assessd for the kill test in %.1f s\n\n", time.Since(began).Seconds())
	return path, cleanup, nil
}

// killTest runs the fault row: students each saving every
// o.every through two `assessd serve` processes on the database at dbURL,
// half of them sent to each, with a Redis of their own; a quarter of the
// way in, one instance is killed (SIGKILL) and a second later Redis is
// restarted empty; halfway, the killed instance starts again. A save that
// fails is resent to the other instance with the same Idempotency-Key.
// Then every student's last acknowledged value of each question is
// compared with the database's.
func killTest(ctx context.Context, a *app.App, base, dbURL, bin string, s *school, o killOptions) (killResult, error) {
	dir, err := os.MkdirTemp("", "benchexamday")
	if err != nil {
		return killResult{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	sys := tenancy.WithCaller(ctx, tenancy.SystemCaller(s.orgID))
	students, err := s.enroll(sys, a, base, "k", o.students, 16)
	if err != nil {
		return killResult{}, err
	}
	rds := &redisServer{sock: filepath.Join(dir, "redis.sock")}
	if err := rds.start(); err != nil {
		return killResult{}, err
	}
	defer rds.stop()
	// Nothing listens there: serve's workflow starts wait in the outbox.
	temporal, err := freeAddr()
	if err != nil {
		return killResult{}, err
	}
	instances := make([]*serveProcess, 2)
	for i := range instances {
		addr, err := freeAddr()
		if err != nil {
			return killResult{}, err
		}
		instances[i] = &serveProcess{name: string(rune('A' + i)), bin: bin, log: filepath.Join(dir, fmt.Sprintf("serve-%d.log", i)),
			env: []string{"ASSESSD_ADDR=" + addr, "DATABASE_URL=" + dbURL, "REDIS_URL=unix://" + rds.sock,
				"TEMPORAL_ADDRESS=" + temporal, "ASSESSD_LOG_LEVEL=error"}, url: "http://" + addr}
		if _, err := instances[i].start(); err != nil {
			return killResult{}, err
		}
		defer instances[i].stop()
	}
	x := newExam(&school{orgID: s.orgID, staffKey: s.staffKey, examID: s.examID, questions: s.questions, students: students}, 16)
	if err := each(len(students), x.clients, func(i int) error {
		return x.start(instances[i%2].url, students[i], func(time.Duration) {})
	}); err != nil {
		return killResult{}, err
	}
	fmt.Printf("\nkill test: %d more students, each saving every %s (cycling through the questions, a new value each time) for %s\n"+
		"to one of two `assessd serve` processes (half of them to each) on the same database, with a private redis-server;\n"+
		"a save that fails is resent to the other instance with the same Idempotency-Key (Temporal is not running)\n\n",
		o.students, o.every, o.d)

	began := time.Now()
	stop := make(chan struct{})
	events := make(chan error, 1)
	go func() {
		events <- faults(began, o.d, instances[0], rds)
		close(stop)
	}()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.students}, Timeout: 10 * time.Second}
	var tally saveTally
	last := make([]map[string]int, len(students))
	var wg sync.WaitGroup
	var clientErr atomic.Pointer[error]
	for i, st := range students {
		last[i] = map[string]int{}
		c := &killClient{hc: hc, st: st, home: i % 2, instances: instances, tally: &tally, last: last[i]}
		// Spread over the period, as students' clocks are.
		offset := o.every * time.Duration(i) / time.Duration(len(students))
		wg.Go(func() {
			time.Sleep(offset)
			if err := c.run(stop, o.every); err != nil {
				clientErr.CompareAndSwap(nil, &err)
			}
		})
	}
	faultErr := <-events
	wg.Wait()
	if faultErr != nil {
		return killResult{}, faultErr
	}
	if err := clientErr.Load(); err != nil {
		return killResult{}, *err
	}

	missing, wrong, err := compare(ctx, dbURL, students, last)
	if err != nil {
		return killResult{}, err
	}
	r := killResult{acknowledged: int(tally.acknowledged.Load()), resent: int(tally.resent.Load()), lost: missing + wrong}
	fmt.Printf("\n%d saves acknowledged (2xx), %d of them after a resend. Requests failed over to the other instance: %d (%d cut off\n"+
		"mid-flight, the others refused while the instance was down). Resends answered from their Idempotency-Key\n"+
		"(Idempotent-Replayed): %d; answered 409 IDEMPOTENCY_KEY_IN_USE (a key the killed process held; it stays reserved\n"+
		"for its lease, so after %d of those the save, a PUT of the whole response, is sent again under a new key): %d,\n"+
		"new keys: %d; answered 429: %d; saves never acknowledged: %d.\n"+
		"Of the last acknowledged value of each student's questions, %d are missing from the database and %d differ.\n",
		r.acknowledged, r.resent, tally.failedOver.Load(), tally.cutOff.Load(), tally.replayed.Load(), inUseBeforeNewKey, tally.inUse.Load(),
		tally.rekeyed.Load(), tally.throttled.Load(), tally.unacknowledged.Load(), missing, wrong)
	return r, nil
}

// faults kills instance a (SIGKILL) a quarter of the way into d, restarts
// Redis a second later, starts a again halfway and returns at d.
func faults(began time.Time, d time.Duration, a *serveProcess, rds *redisServer) error {
	at := func(t time.Duration) { time.Sleep(time.Until(began.Add(t))) }
	since := func() float64 { return time.Since(began).Seconds() }
	at(d / 4)
	// The kill lands while requests are in flight, if any come within a
	// second.
	for wait := time.Now().Add(time.Second); a.inFlight.Load() == 0 && time.Now().Before(wait); {
		time.Sleep(100 * time.Microsecond)
	}
	inFlight := a.inFlight.Load()
	pid, err := a.kill()
	if err != nil {
		return err
	}
	fmt.Printf("t=%4.1fs  kill -9 of serve %s (pid %d); requests in flight to it: %d\n", since(), a.name, pid, inFlight)
	at(d/4 + time.Second)
	rds.stop()
	if err := rds.start(); err != nil {
		return err
	}
	fmt.Printf("t=%4.1fs  Redis restarted, empty\n", since())
	at(d / 2)
	ready, err := a.start()
	if err != nil {
		return err
	}
	fmt.Printf("t=%4.1fs  serve %s started again, answering after %.1f s\n", since(), a.name, ready.Seconds())
	at(d)
	fmt.Printf("t=%4.1fs  saving stops\n", since())
	return nil
}

// saveTally counts what the kill test's saves met.
type saveTally struct {
	acknowledged, resent, failedOver, cutOff, replayed, inUse, rekeyed, throttled, unacknowledged atomic.Int64
}

// inUseBeforeNewKey is how many IDEMPOTENCY_KEY_IN_USE answers a client
// waits out before it resends the save under a new key: a key the killed
// process reserved stays reserved for its lease (idempotency.Lease, two
// minutes), and a save is a PUT of the whole response, safe to send again.
const inUseBeforeNewKey = 3

// giveUpAfter bounds how long a client resends one save.
const giveUpAfter = 30 * time.Second

// killClient is one student of the kill test.
type killClient struct {
	hc        *http.Client
	st        *student
	home      int
	instances []*serveProcess
	tally     *saveTally
	// last is the last acknowledged value of each question.
	last map[string]int
}

// run saves every every until stop is closed, a new value each time.
func (c *killClient) run(stop <-chan struct{}, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for n := 1; ; n++ {
		q := c.st.questionIDs[(n-1)%len(c.st.questionIDs)]
		if err := c.save(q, n); err != nil {
			return err
		}
		select {
		case <-stop:
			return nil
		case <-t.C:
		}
	}
}

// save sends one save until it is acknowledged, to the student's own
// instance first and to the other after a failure.
func (c *killClient) save(q string, value int) error {
	key, target, inUse := fmt.Sprintf("%s-%s-%d", c.st.attemptID, q, value), c.home, 0
	url := func() string { return c.instances[target].url + "/attempts/" + c.st.attemptID + "/responses/" + q }
	for began, tries := time.Now(), 0; ; tries++ {
		if time.Since(began) > giveUpAfter {
			c.tally.unacknowledged.Add(1)
			return nil
		}
		if tries == 1 {
			c.tally.resent.Add(1)
		}
		status, header, body, err := c.put(c.instances[target], url(), key, value)
		switch {
		case err == nil && status == http.StatusOK:
			if header.Get("Idempotent-Replayed") == "true" {
				c.tally.replayed.Add(1)
			}
			c.tally.acknowledged.Add(1)
			c.last[q] = value
			return nil
		case err != nil || status >= 500:
			if err != nil && !errors.Is(err, syscall.ECONNREFUSED) {
				c.tally.cutOff.Add(1)
			}
			c.tally.failedOver.Add(1)
			target = 1 - target
			time.Sleep(50 * time.Millisecond)
		case status == http.StatusConflict && bytes.Contains(body, []byte("IDEMPOTENCY_KEY_IN_USE")):
			c.tally.inUse.Add(1)
			if inUse++; inUse >= inUseBeforeNewKey {
				key, inUse = key+"'", 0
				c.tally.rekeyed.Add(1)
			}
			time.Sleep(retryAfter(header))
		case status == http.StatusTooManyRequests:
			c.tally.throttled.Add(1)
			time.Sleep(retryAfter(header))
		default:
			return fmt.Errorf("save %s of %s: %d %s", q, c.st.attemptID, status, body)
		}
	}
}

func (c *killClient) put(to *serveProcess, url, key string, value int) (int, http.Header, []byte, error) {
	to.inFlight.Add(1)
	defer to.inFlight.Add(-1)
	req, err := newRequest(http.MethodPut, url, key, map[string]any{"value": value})
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.st.key)
	// net/http resends a keyed request cut off on a reused connection to
	// the same instance by itself; without GetBody it cannot, and the
	// client resends it to the other one.
	req.GetBody = nil
	res, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, body, err
}

// retryAfter is an answer's Retry-After, a second when it has none.
func retryAfter(h http.Header) time.Duration {
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return time.Second
}

// compare counts the acknowledged last values the database does not hold:
// missing rows and other values.
func compare(ctx context.Context, dbURL string, students []*student, last []map[string]int) (missing, wrong int, err error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(ctx)
	attempts := make([]string, len(students))
	for i, st := range students {
		attempts[i] = st.attemptID
	}
	rows, err := conn.Query(ctx, `SELECT attempt_id, question_id, value FROM attempt_responses WHERE attempt_id = ANY($1)`, attempts)
	if err != nil {
		return 0, 0, err
	}
	saved := map[[2]string]any{}
	var attempt, question string
	var value any
	if _, err := pgx.ForEachRow(rows, []any{&attempt, &question, &value}, func() error {
		saved[[2]string{attempt, question}] = value
		return nil
	}); err != nil {
		return 0, 0, err
	}
	for i, st := range students {
		for q, want := range last[i] {
			got, ok := saved[[2]string{st.attemptID, q}]
			switch {
			case !ok:
				missing++
			case got != float64(want):
				wrong++
			}
		}
	}
	return missing, wrong, nil
}

// freeAddr is a loopback address no one listens on at the moment.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// serveProcess is one `assessd serve` child process. Children share the
// benchmark's process group, so a Ctrl-C stops them with it.
type serveProcess struct {
	name, bin, log, url string
	env                 []string
	cmd                 *exec.Cmd
	// inFlight counts the requests sent to it and not yet answered.
	inFlight atomic.Int64
}

// start starts the process and returns how long it took to answer
// /healthz.
func (p *serveProcess) start() (time.Duration, error) {
	logFile, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	// The child holds its own copy of the descriptor.
	defer func() { _ = logFile.Close() }()
	began := time.Now()
	p.cmd = exec.Command(p.bin, "serve") //nolint:gosec // G204: the assessd binary this benchmark built or was given
	p.cmd.Env = append(os.Environ(), p.env...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		return 0, fmt.Errorf("start serve %s: %w", p.name, err)
	}
	for deadline := began.Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if res, err := http.Get(p.url + "/healthz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return time.Since(began), nil
			}
		}
		if time.Now().After(deadline) {
			p.stop()
			logs, _ := os.ReadFile(p.log)
			return 0, fmt.Errorf("serve %s did not answer /healthz within 30 s; its log:\n%s", p.name, logs)
		}
	}
}

// kill kills the process with SIGKILL and returns its pid.
func (p *serveProcess) kill() (int, error) {
	pid := p.cmd.Process.Pid
	if err := p.cmd.Process.Kill(); err != nil {
		return 0, err
	}
	_ = p.cmd.Wait()
	p.cmd = nil
	return pid, nil
}

// stop ends a running process with SIGTERM, as an orchestrator does, and
// waits for it; stopping a stopped process does nothing.
func (p *serveProcess) stop() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
	p.cmd = nil
}

// redisServer is the kill test's own redis-server on a unix socket,
// keeping nothing on disk: the machine's shared Redis is never touched.
type redisServer struct {
	sock string
	cmd  *exec.Cmd
}

func (r *redisServer) start() error {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return errors.New("redis-server is not installed (make deps)")
	}
	r.cmd = exec.Command(path, "--port", "0", "--unixsocket", r.sock, "--unixsocketperm", "700", //nolint:gosec // G204: the installed redis-server
		"--save", "", "--appendonly", "no", "--dir", filepath.Dir(r.sock), "--loglevel", "warning")
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if conn, err := net.Dial("unix", r.sock); err == nil {
			_ = conn.Close()
			return nil
		}
		if time.Now().After(deadline) {
			r.stop()
			return errors.New("redis-server did not listen within 10 s")
		}
	}
}

// stop kills the server; stopping a stopped server does nothing.
func (r *redisServer) stop() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}
