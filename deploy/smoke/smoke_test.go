// Package smoke checks the generated Grafana dashboards against a real
// Prometheus scraping a real stack: every panel and variable query parses,
// and every panel that the test's traffic feeds has data.
package smoke

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/client"

	gradingactivities "github.com/assessd/assessd/activities/grading"
	scanningactivities "github.com/assessd/assessd/activities/scanning"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/delivery"
	"github.com/assessd/assessd/internal/lti"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/egress"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/devenvtest"
	"github.com/assessd/assessd/internal/testkit/eventually"
	"github.com/assessd/assessd/internal/testkit/redistest"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/observability/temporalmetrics"
	"github.com/assessd/assessd/tenancy"
)

// mayBeEmpty are the panels the test's traffic does not feed, and why.
var mayBeEmpty = map[string]string{
	"Media fetches":                             "no grading file reaches the (absent) media CDN",
	"Worker memory waits":                       "the test's traffic never fills the worker's memory budget",
	"Scans finished":                            "the test's traffic scans no answer sheet",
	"Pages read":                                "the test's traffic scans no answer sheet",
	"Page read time p95":                        "the test's traffic scans no answer sheet",
	"Exam generations finished":                 "the test's traffic generates no exam",
	"Question regenerations finished":           "the test's traffic regenerates no question",
	"Webhook deliveries":                        "the test's traffic registers no webhook endpoint",
	"Failed webhook deliveries by organization": "the test's traffic registers no webhook endpoint",
	"Webhook delivery latency p95":              "the test's traffic registers no webhook endpoint",
	"LTI score posts":                           "the test's LMS launches from no line item",
	"Activity schedule-to-start p95":            "activities start eagerly on the worker that scheduled them and record none (decision 0123)",
}

func TestDashboardsQueryRealMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL databases, Temporal and Prometheus")
	}
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("the prometheus binary is required (Debian package prometheus; make deps installs it)")
	}
	ctx := context.Background()
	tc := devenvtest.Temporal(t)
	db := storetest.New(t)

	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	a, err := app.New(ctx, db, app.Config{BaseURL: srv.URL, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Redis: redistest.Client(t), Temporal: tc,
		Webhooks: egress.Targets{AllowPrivate: true}}) // the LMS registered below is on loopback
	if err != nil {
		t.Fatal(err)
	}
	handler = a.Handler
	run, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	a.Start(run) // the outbox dispatcher starts the grading workflows
	workers := map[string]string{}
	for _, region := range []string{"eu", "global"} {
		workers[region] = startWorker(t, tc, db, region)
	}

	prom := startPrometheus(t, promBin, hostPort(srv.URL), workers)

	eu := newTenant(t, a, "FR")
	global := newTenant(t, a, "US")
	for _, tn := range []tenant{eu, global} {
		sendTraffic(t, srv.URL, a, tn)
	}
	waitFor(t, prom, `sum(assessd_grading_results_total{outcome="graded"})`, 2)
	waitFor(t, prom, `count(sum by (region) (assessd_grading_results_total{outcome="graded"}))`, 2)
	// Rates need two samples of every series the traffic created; the
	// server and the workers are scraped separately, so each is waited for.
	for _, metric := range []string{`assessd_grading_results_total{outcome="graded"}`, "assessd_embed_sessions_opened_total",
		"assessd_oauth_tokens_issued_total", "assessd_logins_total", `assessd_http_requests_total{job="assessd-serve"}`} {
		waitFor(t, prom, "min(count_over_time("+metric+"[1m]))", 2)
	}

	files, _ := filepath.Glob("../grafana/dashboards/*.json")
	if len(files) != 4 {
		t.Fatalf("%d dashboards, want 4", len(files))
	}
	for _, file := range files {
		checkDashboard(t, prom, file, eu.org.ID)
	}
}

// startWorker runs region's grading worker like `assessd worker` does, its
// metrics (Temporal SDK ones included) on their own registry and listener.
func startWorker(t *testing.T, tc client.Client, db *store.DB, region string) string {
	m := observability.NewMetrics()
	m.RegisterOrgInfo(app.OrgInfoLookup(db))
	c, err := client.NewClientFromExisting(tc, client.Options{MetricsHandler: temporalmetrics.NewHandler(m.Registry)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	w, err := app.NewWorker(c, db, app.WorkerConfig{
		Region:      region,
		Provider:    ai.Instrument(ai.NewBuiltin(), "builtin", region, m.Registry),
		Fetcher:     media.NewFetcher(nil, media.Options{Registerer: m.Registry}),
		Metrics:     gradingactivities.NewMetrics(m.Registry, m.Org),
		ScanMetrics: scanningactivities.NewMetrics(m.Registry, m.Org),
		Registry:    m.Registry,
		OrgLabel:    m.Org,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	s := httptest.NewServer(promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	t.Cleanup(s.Close)
	return hostPort(s.URL)
}

func hostPort(u string) string { return strings.TrimPrefix(u, "http://") }

// startPrometheus runs a real Prometheus scraping the stack every second
// under the job names of deploy/prometheus/prometheus.yml.
func startPrometheus(t *testing.T, bin, serve string, workers map[string]string) string {
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: assessd-serve
    static_configs: [{targets: [%q]}]
  - job_name: assessd-worker
    static_configs:
      - {targets: [%q], labels: {region: eu}}
      - {targets: [%q], labels: {region: global}}
`, serve, workers["eu"], workers["global"])
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The logs are read once the process has ended (cleanups run last
	// first): it writes them while it runs.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("prometheus logs:\n%s", logs.String())
		}
	})
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := "http://" + addr
	eventually.Succeeds(t, 20*time.Second, func() error {
		res, err := http.Get(base + "/-/ready")
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("prometheus /-/ready answered %d", res.StatusCode)
		}
		return nil
	})
	return base
}

type tenant struct {
	org     tenancy.Org
	teacher string // API key
	student string // user id
	ctx     context.Context
}

func newTenant(t *testing.T, a *app.App, country string) tenant {
	org, err := a.Tenancy.CreateOrg(context.Background(), tenancy.NewOrg{Name: "School " + country, Country: country, Plan: "pro"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(org.ID))
	tn := tenant{org: org, ctx: ctx}
	for _, role := range []tenancy.Role{tenancy.RoleTeacher, tenancy.RoleStudent} {
		u, err := a.Tenancy.CreateUser(ctx, tenancy.NewUser{Email: string(role) + "@" + org.ID + ".test", Name: string(role), Role: role})
		if err != nil {
			t.Fatal(err)
		}
		if role == tenancy.RoleStudent {
			tn.student = u.ID
			continue
		}
		if _, tn.teacher, err = a.Tenancy.CreateAPIKey(ctx, u.ID, "smoke"); err != nil {
			t.Fatal(err)
		}
	}
	return tn
}

// sendTraffic feeds every dashboard: API calls (fine, 404, unauthenticated,
// resent with an Idempotency-Key), an AI-graded result in the
// organization's region, an embed session opened, an OAuth token issued and
// one refused, and the login page.
func sendTraffic(t *testing.T, base string, a *app.App, tn tenant) {
	exam, err := a.Assessment.CreateExam(tn.ctx, assessment.NewExam{Name: "Plants", Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	essay, err := a.Assessment.CreateQuestion(tn.ctx, exam.ID, assessment.NewQuestion{Type: assessment.TypeEssay, Prompt: "Describe photosynthesis.",
		Points: 4, Config: map[string]any{"rubric": "light chlorophyll sugar"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Assessment.SubmitResult(tn.ctx, exam.ID, assessment.NewResult{UserID: tn.student,
		Answers: []assessment.NewAnswer{{QuestionID: essay.ID, Value: "Plants use light and chlorophyll to make sugar."}}}); err != nil {
		t.Fatal(err)
	}
	call(t, "GET", base+"/me", tn.teacher, nil, http.StatusOK)
	call(t, "GET", base+"/exams/"+exam.ID, tn.teacher, nil, http.StatusOK)
	call(t, "GET", base+"/exams/exm_01ARZ3NDEKTSV4RRFFQ69G5FAV", tn.teacher, nil, http.StatusNotFound)
	call(t, "GET", base+"/exams", "", nil, http.StatusUnauthorized)
	// A request resent with its Idempotency-Key: run once, then replayed.
	for range 2 {
		callWith(t, "POST", base+"/folders", tn.teacher, map[string]any{"name": "Term 1"}, http.StatusOK, http.Header{"Idempotency-Key": {"smoke-1"}})
	}
	// An exam taken as an assignment: started, saved, submitted.
	asg, err := a.Delivery.CreateAssignment(tn.ctx, delivery.NewAssignment{ExamID: exam.ID, UserIDs: []string{tn.student},
		OpensAt: time.Now().Add(-time.Minute), ClosesAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	attempt := call(t, "POST", base+"/assignments/"+asg.ID+"/attempts", tn.teacher, map[string]any{"userId": tn.student}, http.StatusOK)
	call(t, "PUT", base+"/attempts/"+attempt["id"].(string)+"/responses/"+essay.ID, tn.teacher, map[string]any{"value": "Light."}, http.StatusOK)
	call(t, "POST", base+"/attempts/"+attempt["id"].(string)+"/submit", tn.teacher, map[string]any{}, http.StatusOK)
	session := call(t, "POST", base+"/embed-sessions", tn.teacher, map[string]any{"flow": "student-exam", "actor": tn.student, "examId": exam.ID}, http.StatusOK)
	call(t, "GET", base+"/embed/"+session["id"].(string), "", nil, http.StatusOK)

	// OAuth: a service account's JWT bearer grant, and a refused grant.
	sa, err := a.ServiceAccounts.CreateServiceAccount(tn.ctx, "sync bot", tenancy.RoleTeacher)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	keyID, err := a.ServiceAccounts.AddServiceAccountKey(tn.ctx, sa.ID, string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})))
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", keyID))
	claims, _ := json.Marshal(map[string]any{"iss": sa.ID, "sub": sa.ID, "aud": base, "iat": time.Now().Unix(), "exp": time.Now().Add(5 * time.Minute).Unix()})
	sig, _ := signer.Sign(claims)
	assertion, _ := sig.CompactSerialize()
	for assertion, want := range map[string]int{assertion: http.StatusOK, "not-a-jwt": http.StatusBadRequest} {
		res, err := http.PostForm(base+"/oauth/token", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {assertion}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Fatalf("token for assertion %.20s: %d, want %d", assertion, res.StatusCode, want)
		}
	}
	res, err := http.Get(base + "/login")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	sendLTITraffic(t, base, a, tn)
}

// sendLTITraffic registers an LMS, starts a login from it and posts a launch
// whose id_token is not a JWT: a login redirected and a launch refused, both
// of the organization.
func sendLTITraffic(t *testing.T, base string, a *app.App, tn tenant) {
	platform, err := a.LTI.CreatePlatform(tn.ctx, lti.NewPlatform{Name: "LMS", Issuer: "https://lms.example", ClientID: "smoke-" + tn.org.ID,
		AuthLoginURL: "https://lms.example/auth", AccessTokenURL: "https://127.0.0.1:9/token", JWKSURL: "https://127.0.0.1:9/jwks"})
	if err != nil {
		t.Fatal(err)
	}
	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noRedirects.Get(base + "/lti/login?" + url.Values{"iss": {platform.Issuer}, "client_id": {platform.ClientID},
		"login_hint": {"smoke"}, "target_link_uri": {base + "/lti/launch"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	to, err := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusFound || err != nil || to.Query().Get("state") == "" {
		t.Fatalf("LTI login: %d to %q, want a redirect with a state", res.StatusCode, res.Header.Get("Location"))
	}
	res, err = http.PostForm(base+"/lti/launch", url.Values{"id_token": {"not-a-jwt"}, "state": {to.Query().Get("state")}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode < 400 || res.StatusCode >= 500 {
		t.Fatalf("a launch with a malformed id_token: %d, want a 4xx refusal", res.StatusCode)
	}
}

// call sends an API request and checks its status.
func call(t *testing.T, method, u, key string, body any, want int) map[string]any {
	t.Helper()
	return callWith(t, method, u, key, body, want, nil)
}

// callWith is call with extra request headers.
func callWith(t *testing.T, method, u, key string, body any, want int, header http.Header) map[string]any {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, u, r)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, u, res.StatusCode, want, raw)
	}
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return out
}

// promResult is the data of a Prometheus API answer.
type promResult struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		Result json.RawMessage `json:"result"`
	} `json:"data"`
}

// instant runs expr at the current time; it returns the number of series.
func instant(t *testing.T, prom, expr string) (int, error) {
	res, err := http.PostForm(prom+"/api/v1/query", url.Values{"query": {expr}})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out promResult
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Status != "success" {
		return 0, fmt.Errorf("%s: %s", out.ErrorType, out.Error)
	}
	var series []json.RawMessage
	_ = json.Unmarshal(out.Data.Result, &series)
	return len(series), nil
}

func waitFor(t *testing.T, prom, expr string, want float64) {
	t.Helper()
	eventually.Succeeds(t, 60*time.Second, func() error {
		if n, err := instant(t, prom, fmt.Sprintf("(%s) >= %v", expr, want)); err != nil || n == 0 {
			return fmt.Errorf("%s is not >= %v yet (%v)", expr, want, err)
		}
		return nil
	})
}

// dashboard is the part of the generated JSON the test reads.
type dashboard struct {
	Title  string `json:"title"`
	Panels []struct {
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Query json.RawMessage
		} `json:"list"`
	} `json:"templating"`
}

// checkDashboard runs every variable query (label_values as a series
// query) and every panel query, once for all organizations and once for
// org, with Grafana's variables expanded.
func checkDashboard(t *testing.T, prom, file, org string) {
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil || !strings.HasPrefix(q.Query, "label_values(") {
			t.Errorf("%s: variable %s: unexpected query %s", d.Title, v.Name, v.Query)
			continue
		}
		metric, label, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(q.Query, "label_values("), ")"), ", ")
		if n, err := instant(t, prom, fmt.Sprintf("count by (%s) (%s)", label, metric)); err != nil || n == 0 {
			t.Errorf("%s: variable %s (%s): %d values, err %v", d.Title, v.Name, q.Query, n, err)
		}
	}
	for _, scope := range []string{".*", org} {
		expand := strings.NewReplacer("$__rate_interval", "30s", "$org", scope, "$region", ".*")
		for _, p := range d.Panels {
			for _, target := range p.Targets {
				n, err := instant(t, prom, expand.Replace(target.Expr))
				if err != nil {
					t.Errorf("%s / %s: %v\n%s", d.Title, p.Title, err, target.Expr)
					continue
				}
				if _, optional := mayBeEmpty[p.Title]; n == 0 && !optional {
					t.Errorf("%s / %s (org %s): no data\n%s", d.Title, p.Title, scope, target.Expr)
				}
			}
		}
	}
}
