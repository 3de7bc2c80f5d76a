package grading_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/assessd/assessd/activities/grading"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/membudget"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/devenvtest"
	"github.com/assessd/assessd/internal/testkit/eventually"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/observability"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/workflows"
	wf "github.com/assessd/assessd/workflows/grading"
)

// recordingAI is an OpenAI-compatible endpoint that records every request
// body and answers with a fixed grade.
type recordingAI struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
	hold   chan struct{} // when set, requests wait for it to close
}

func newRecordingAI(t *testing.T) *recordingAI {
	r := &recordingAI{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, string(body))
		hold := r.hold
		r.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-req.Context().Done():
				return
			}
		}
		grade, _ := json.Marshal(map[string]any{"score": 3, "max_score": 5, "feedback": "Good structure.", "rationale": "Covers two of three points."})
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": string(grade)}}}})
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recordingAI) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bodies...)
}

type harness struct {
	t          *testing.T
	db         *store.DB
	ten        *tenancy.Service
	content    *assessment.Service
	temporal   client.Client
	eu, global *recordingAI
	cdn        *httptest.Server
	fetcher    *media.Fetcher
	metrics    *grading.Metrics
	registry   *prometheus.Registry
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, temporal: devenvtest.Temporal(t), db: storetest.New(t), eu: newRecordingAI(t), global: newRecordingAI(t)}
	h.ten = tenancy.NewService(h.db)
	h.content = assessment.NewService(h.db)
	go app.NewDispatcher(h.temporal, h.db, prometheus.NewRegistry(), workflows.DispatchOptions{}).Run(t.Context())
	h.cdn = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("student essay scan"))
	}))
	t.Cleanup(h.cdn.Close)
	h.fetcher = media.NewFetcher([]string{h.cdn.URL + "/media/"}, media.Options{HTTPClient: h.cdn.Client()})
	h.registry = prometheus.NewRegistry()
	var orgs observability.OrgLabeler
	h.metrics = grading.NewMetrics(h.registry, orgs.Label)
	return h
}

// startWorker runs region's worker against its recording endpoint.
func (h *harness) startWorker(region string) func() {
	endpoint := h.global
	if region == "eu" {
		endpoint = h.eu
	}
	provider := ai.NewOpenAI(ai.OpenAIConfig{BaseURL: endpoint.URL, APIKey: "test-key", Model: "grader"})
	w, err := app.NewWorker(h.temporal, h.db, app.WorkerConfig{Region: region, Provider: provider, Fetcher: h.fetcher, Metrics: h.metrics})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		h.t.Fatal(err)
	}
	return w.Stop
}

// school is an organization with a file-upload exam and a student.
type school struct {
	org     tenancy.Org
	staff   context.Context
	student tenancy.User
	exam    assessment.Exam
	upload  assessment.Question
}

func (h *harness) newSchool(country string) school {
	h.t.Helper()
	ctx := context.Background()
	org, err := h.ten.CreateOrg(ctx, tenancy.NewOrg{Name: "School " + country, Country: country, Plan: tenancy.PlanPro})
	if err != nil {
		h.t.Fatal(err)
	}
	staff := tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID))
	s := school{org: org, staff: staff}
	if s.student, err = h.ten.CreateUser(staff, tenancy.NewUser{Email: "s@" + country + ".test", Name: "Student", Role: tenancy.RoleStudent}); err != nil {
		h.t.Fatal(err)
	}
	if s.exam, err = h.content.CreateExam(staff, assessment.NewExam{Name: "Essay exam", Language: "en"}); err != nil {
		h.t.Fatal(err)
	}
	if s.upload, err = h.content.CreateQuestion(staff, s.exam.ID, assessment.NewQuestion{
		Type: assessment.TypeFileUpload, Prompt: "Upload your essay on photosynthesis (" + country + ").", Points: 5,
		Config: map[string]any{"rubric": "Explains light and dark reactions."}}); err != nil {
		h.t.Fatal(err)
	}
	return s
}

// submit submits a file answer; submission starts grading on the
// organization's region at that moment.
func (h *harness) submit(s school, files []string) string {
	h.t.Helper()
	r, err := h.content.SubmitResult(s.staff, s.exam.ID, assessment.NewResult{UserID: s.student.ID,
		Answers: []assessment.NewAnswer{{QuestionID: s.upload.ID, Value: "see files", Files: files}}})
	if err != nil {
		h.t.Fatal(err)
	}
	org, err := h.ten.Org(s.staff)
	if err != nil {
		h.t.Fatal(err)
	}
	if r.Status != "grading" || r.Region != org.AIRegion {
		h.t.Fatalf("submitted result: status %s region %s, want grading on %s", r.Status, r.Region, org.AIRegion)
	}
	return r.ID
}

func (h *harness) waitGraded(s school, resultID string) assessment.Result {
	h.t.Helper()
	var r assessment.Result
	eventually.Succeeds(h.t, 45*time.Second, func() error {
		var err error
		if r, err = h.content.Result(s.staff, s.exam.ID, resultID); err != nil {
			h.t.Fatal(err)
		}
		if r.Status == "grading" {
			return fmt.Errorf("result %s still grading", resultID)
		}
		return nil
	})
	return r
}

func countContaining(bodies []string, s string) int {
	n := 0
	for _, b := range bodies {
		if strings.Contains(b, s) {
			n++
		}
	}
	return n
}

func TestGradingIsPinnedToTheOrganizationsRegion(t *testing.T) {
	h := newHarness(t)
	defer h.startWorker("eu")()
	defer h.startWorker("global")()
	eu, us := h.newSchool("DE"), h.newSchool("US")

	onCDN, offCDN := h.cdn.URL+"/media/essay.txt", "https://elsewhere.example/essay.txt"
	euResult := h.submit(eu, []string{onCDN, offCDN})
	usResult := h.submit(us, []string{onCDN})
	for s, id := range map[*school]string{&eu: euResult, &us: usResult} {
		r := h.waitGraded(*s, id)
		if r.Status != "graded" || r.Score != 3 {
			t.Fatalf("%s result: status %s score %v reason %q", s.org.Country, r.Status, r.Score, r.Reason)
		}
	}
	euBodies, globalBodies := h.eu.requests(), h.global.requests()
	if countContaining(euBodies, "(DE)") != 1 || countContaining(globalBodies, "(DE)") != 0 {
		t.Fatalf("EU prompts: %d at the EU endpoint, %d at the global one", countContaining(euBodies, "(DE)"), countContaining(globalBodies, "(DE)"))
	}
	if countContaining(globalBodies, "(US)") != 1 || countContaining(euBodies, "(US)") != 0 {
		t.Fatal("the global organization's prompt did not go (only) to the global endpoint")
	}
	// The CDN file is attached after the prompt; the other URL never is,
	// and its skip is recorded on the answer's grading details.
	if !strings.Contains(euBodies[0], "data:text/plain;base64,") || strings.Contains(euBodies[0], "elsewhere.example") {
		t.Fatalf("EU request attachments wrong: %s", euBodies[0])
	}
	graded := h.waitGraded(eu, euResult)
	details := graded.Answers[0].Grading
	skippedFiles, _ := details["skippedFiles"].([]any)
	if details["region"] != "eu" || len(skippedFiles) != 1 || skippedFiles[0].(map[string]any)["url"] != offCDN ||
		skippedFiles[0].(map[string]any)["reason"] != "not on the media CDN" {
		t.Fatalf("grading details %v", details)
	}

	// A region change applies to every request from then on.
	admin := tenancy.WithCaller(context.Background(), &tenancy.Caller{Kind: tenancy.KindAPIKey, OrgID: eu.org.ID, UserID: "usr_admin",
		Role: tenancy.RoleAdmin, Scopes: tenancy.APIKeyScopes(tenancy.RoleAdmin)})
	region := tenancy.RegionGlobal
	if _, err := h.ten.UpdateOrg(admin, tenancy.OrgPatch{AIRegion: &region}); err != nil {
		t.Fatal(err)
	}
	h.waitGraded(eu, h.submit(eu, []string{onCDN}))
	if got := countContaining(h.global.requests(), "(DE)"); got != 1 {
		t.Fatalf("after switching to global, %d DE requests at the global endpoint, want 1", got)
	}
	if got := countContaining(h.eu.requests(), "(DE)"); got != 1 {
		t.Fatalf("the EU endpoint got %d DE requests, want only the one before the switch", got)
	}
}

// TestGradingIsCountedPerOrganization: a grading run's counters carry the
// organization's id beside its region, so the grading dashboard can be
// filtered by organization; the latency histogram keeps only the region.
func TestGradingIsCountedPerOrganization(t *testing.T) {
	h := newHarness(t)
	defer h.startWorker("eu")()
	defer h.startWorker("global")()
	eu, us := h.newSchool("DE"), h.newSchool("US")
	onCDN := h.cdn.URL + "/media/essay.txt"
	euResult, usResult := h.submit(eu, []string{onCDN, "https://elsewhere.example/essay.txt"}), h.submit(us, nil)
	h.waitGraded(eu, euResult)
	h.waitGraded(us, usResult)

	series := func(metric, org, region, outcome string) string {
		return fmt.Sprintf("%s{org=%q,outcome=%q,region=%q}", metric, org, outcome, region)
	}
	want := map[string]float64{
		series("assessd_grading_results_total", eu.org.ID, "eu", "graded"):            1,
		series("assessd_grading_results_total", eu.org.ID, "eu", "failed"):            0,
		series("assessd_grading_results_total", us.org.ID, "global", "graded"):        1,
		series("assessd_grading_results_total", us.org.ID, "global", "failed"):        0,
		series("assessd_grading_files_total", eu.org.ID, "eu", "fetched"):             1,
		series("assessd_grading_files_total", eu.org.ID, "eu", "skipped: not_on_cdn"): 1,
		series("assessd_grading_files_total", us.org.ID, "global", "fetched"):         0,
		`assessd_grading_duration_seconds_count{region="eu"}`:                         1,
		`assessd_grading_duration_seconds_count{region="global"}`:                     1,
	}
	// FinishResult counts a result just after committing it.
	eventually.Succeeds(t, 5*time.Second, func() error {
		got := samples(t, h.registry, "assessd_grading_results_total", "assessd_grading_files_total", "assessd_grading_duration_seconds")
		for name, v := range want {
			if n, ok := got[name]; !ok || n != v {
				return fmt.Errorf("%s = %v (present %v), want %v; all: %v", name, n, ok, v, got)
			}
		}
		if len(got) != len(want) {
			return fmt.Errorf("%d series, want %d: %v", len(got), len(want), got)
		}
		return nil
	})
}

// samples are the registry's samples of the named metrics, keyed by the
// series in exposition form with the labels sorted (a histogram by its
// _count only).
func samples(t *testing.T, reg *prometheus.Registry, names ...string) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if !slices.Contains(names, f.GetName()) {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key := "{" + strings.Join(labels, ",") + "}"
			if h := m.GetHistogram(); h != nil {
				out[f.GetName()+"_count"+key] = float64(h.GetSampleCount())
			} else {
				out[f.GetName()+key] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

func TestGradingSurvivesAWorkerRestart(t *testing.T) {
	h := newHarness(t)
	h.eu.hold = make(chan struct{})
	stop := h.startWorker("eu")
	s := h.newSchool("FR")
	id := h.submit(s, nil)
	eventually.Succeeds(t, 20*time.Second, func() error {
		if len(h.eu.requests()) == 0 {
			return errors.New("the worker never called the AI endpoint")
		}
		return nil
	})
	stop() // the worker dies mid-grading
	h.eu.mu.Lock()
	close(h.eu.hold)
	h.eu.hold = nil
	h.eu.mu.Unlock()
	defer h.startWorker("eu")()
	r := h.waitGraded(s, id)
	if r.Status != "graded" || r.Score != 3 {
		t.Fatalf("after the restart: status %s score %v reason %q", r.Status, r.Score, r.Reason)
	}
	var graded int
	ctx := store.WithOrg(context.Background(), s.org.ID)
	if err := h.db.Q(ctx).QueryRow(ctx, `SELECT count(*) FROM result_answers WHERE result_id = $1 AND status = 'graded'`, id).Scan(&graded); err != nil {
		t.Fatal(err)
	}
	if graded != 1 || len(r.Answers) != 1 {
		t.Fatalf("%d graded answers, %d answers: want exactly one", graded, len(r.Answers))
	}
}

// An answer whose question was deleted before its grading ran cannot be
// graded: the result fails at once with the reason on the answer, and
// nothing reaches the AI provider.
func TestAnAnswerToADeletedQuestionFailsItsResult(t *testing.T) {
	h := newHarness(t)
	us := h.newSchool("US")
	resultID := h.submit(us, []string{h.cdn.URL + "/media/essay.txt"})
	if err := h.content.DeleteQuestion(us.staff, us.exam.ID, us.upload.ID); err != nil {
		t.Fatal(err)
	}
	defer h.startWorker("global")()
	r := h.waitGraded(us, resultID)
	if r.Status != assessment.StatusFailed || r.Reason != "1 answer(s) could not be graded" || len(r.Answers) != 1 {
		t.Fatalf("result %+v", r)
	}
	if a := r.Answers[0]; a.Status != assessment.AnswerFailed || !strings.Contains(a.Feedback, "the question was deleted") {
		t.Fatalf("answer status %s feedback %q", a.Status, a.Feedback)
	}
	if n := len(h.global.requests()); n != 0 {
		t.Fatalf("%d requests reached the AI provider", n)
	}
}

// A result deleted while it is grading (with its exam or its student)
// leaves nothing to grade or finish: the activities fail for good at once
// instead of spending their retries.
func TestAResultDeletedWhileGradingIsNotRetried(t *testing.T) {
	h := newHarness(t)
	us := h.newSchool("US")
	resultID := h.submit(us, []string{h.cdn.URL + "/media/essay.txt"})
	if err := h.content.DeleteExam(us.staff, us.exam.ID); err != nil {
		t.Fatal(err)
	}
	g := &grading.Activities{Results: h.content, Provider: ai.NewBuiltin(), Region: us.org.AIRegion, Fetcher: h.fetcher, Metrics: h.metrics}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(g.GradeAnswer)
	env.RegisterActivity(g.FinishResult)
	_, err := env.ExecuteActivity(g.GradeAnswer, wf.AnswerInput{OrgID: us.org.ID, ResultID: resultID, AnswerID: us.upload.ID, Region: us.org.AIRegion})
	if !workflows.IsPermanent(err) {
		t.Errorf("grading an answer of a deleted result: %v", err)
	}
	_, err = env.ExecuteActivity(g.FinishResult, wf.FinishInput{OrgID: us.org.ID, ResultID: resultID})
	if !workflows.IsPermanent(err) || !strings.Contains(err.Error(), "the result was deleted") {
		t.Errorf("finishing a deleted result: %v", err)
	}
}

// An answer's files are fetched within one reservation of the worker's file
// budget, held until its grading ends: a file past the answer's share is
// skipped, and answers beyond the budget wait before fetching anything.
func TestAnswerFilesStayWithinTheBudget(t *testing.T) {
	h := newHarness(t)
	const fileSize = 1000
	var fetches atomic.Int32
	cdn := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte(strings.Repeat("a", fileSize)))
	}))
	t.Cleanup(cdn.Close)
	fetcher := media.NewFetcher([]string{cdn.URL + "/media/"}, media.Options{MaxBytes: fileSize, HTTPClient: cdn.Client()})
	us := h.newSchool("US")
	g := &grading.Activities{Results: h.content, Fetcher: fetcher, Memory: membudget.New(2*fileSize + fileSize/2),
		Provider: ai.NewOpenAI(ai.OpenAIConfig{BaseURL: h.global.URL, APIKey: "test-key", Model: "grader"}),
		Region:   us.org.AIRegion, Metrics: h.metrics}
	grade := func(resultID string) error {
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestActivityEnvironment()
		env.RegisterActivity(g.GradeAnswer)
		_, err := env.ExecuteActivity(g.GradeAnswer, wf.AnswerInput{OrgID: us.org.ID, ResultID: resultID, AnswerID: us.upload.ID, Region: us.org.AIRegion})
		return err
	}

	// Five files, room for two and a half: the third and later are skipped.
	var urls []string
	for i := range 5 {
		urls = append(urls, fmt.Sprintf("%s/media/f%d.txt", cdn.URL, i))
	}
	id := h.submit(us, urls)
	if err := grade(id); err != nil {
		t.Fatal(err)
	}
	r, err := h.content.Result(us.staff, us.exam.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	details := r.Answers[0].Grading
	attached, _ := details["attachedFiles"].([]any)
	skipped, _ := details["skippedFiles"].([]any)
	if len(attached) != 2 || len(skipped) != 3 || skipped[0].(map[string]any)["reason"] != "files too large together" {
		t.Fatalf("grading details %v", details)
	}

	// Three one-file answers while the provider holds its requests: two
	// fit the budget, the third fetches only once one of them is graded.
	fetches.Store(0)
	h.global.mu.Lock()
	h.global.hold = make(chan struct{})
	h.global.mu.Unlock()
	before := len(h.global.requests())
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		id := h.submit(us, urls[:1])
		wg.Go(func() { errs <- grade(id) })
	}
	eventually.Succeeds(t, 20*time.Second, func() error {
		if n := len(h.global.requests()) - before; n < 2 {
			return fmt.Errorf("%d grading requests", n)
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond)
	if n := fetches.Load(); n != 2 {
		t.Errorf("%d files fetched while two answers held the budget, want 2", n)
	}
	h.global.mu.Lock()
	close(h.global.hold)
	h.global.hold = nil
	h.global.mu.Unlock()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := fetches.Load(); n != 3 {
		t.Errorf("%d files fetched in all, want 3", n)
	}
}
