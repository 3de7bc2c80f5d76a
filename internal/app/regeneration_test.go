package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	gradingactivities "github.com/assessd/assessd/activities/grading"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/regeneration"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/devenvtest"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
	"github.com/assessd/assessd/workflows"
)

// newWorkflowEnv starts assessd with a Temporal dev server and a worker
// per region, each with the provider providers returns for it.
func newWorkflowEnv(t *testing.T, providers func(region string) ai.Provider) *env {
	t.Helper()
	tc := devenvtest.Temporal(t)
	e := newEnvWithConfig(t, func(c *app.Config) {
		c.Temporal = tc
		c.Dispatch = workflows.DispatchOptions{Sweep: 200 * time.Millisecond}
	})
	startRegionWorkers(t, tc, e, providers)
	return e
}

func startRegionWorkers(t *testing.T, tc client.Client, e *env, providers func(region string) ai.Provider) {
	t.Helper()
	// The workers' metrics go to the app's registry, served on /metrics.
	reg := e.app.Metrics.Registry
	grading := gradingactivities.NewMetrics(reg, e.app.Metrics.Org)
	for _, region := range []string{"eu", "global"} {
		w, err := app.NewWorker(tc, e.db, app.WorkerConfig{Region: region, Provider: providers(region), Fetcher: media.NewFetcher(nil, media.Options{}),
			Metrics: grading, Registry: reg, OrgLabel: e.app.Metrics.Org})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
	}
}

// regenerate starts a regeneration of question and waits until it is
// ready.
func (e *env) regenerate(key, exam, question string, body any) map[string]any {
	e.t.Helper()
	r := e.do("POST", "/exams/"+exam+"/questions/"+question+"/regenerations", key, body).must(e.t, http.StatusOK).body
	if r["status"] != "running" || !strings.HasPrefix(str(r, "id"), "rgn_") {
		e.t.Fatalf("started regeneration %v", r)
	}
	return waitStatus(e.t, e, "/question-regenerations/"+str(r, "id"), key, "ready").body
}

// TestQuestionRegenerationOverHTTP regenerates a question with the builtin
// provider end to end, accepts the proposal, and checks that an earlier
// result keeps the revision it answered, with its score and points.
func TestQuestionRegenerationOverHTTP(t *testing.T) {
	t.Parallel()
	e := newWorkflowEnv(t, func(string) ai.Provider { return ai.NewBuiltin() })
	tn := e.newTenant("US", "pro")
	teacher, student := tn.keys[tenancy.RoleTeacher], tn.users[tenancy.RoleStudent].ID

	exam := str(e.do("POST", "/exams", teacher, map[string]any{"name": "Sums", "language": "en"}).must(t, http.StatusOK).body, "id")
	q := e.do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{"type": "numeric", "prompt": "How much is 3 + 4?",
		"config": map[string]any{"correct": 7, "tolerance": 0}, "points": 2}).must(t, http.StatusOK).body
	qid := str(q, "id")
	if q["revision"] != 1.0 {
		t.Fatalf("new question revision %v", q["revision"])
	}
	answer := func(v any) map[string]any {
		return e.do("POST", "/exams/"+exam+"/results", teacher, map[string]any{"userId": student,
			"answers": []any{map[string]any{"questionId": qid, "value": v}}}).must(t, http.StatusOK).body
	}
	early := answer(7)
	if early["score"] != 2.0 {
		t.Fatalf("early result %v", early)
	}

	g := e.regenerate(teacher, exam, qid, map[string]any{"instructions": "change the numbers"})
	proposal := g["proposal"].(map[string]any)
	var a, b int
	if n, _ := fmt.Sscanf(str(proposal, "prompt"), "How much is %d + %d?", &a, &b); n != 2 || a+b == 7 {
		t.Fatalf("proposal %v", proposal)
	}
	if cfg := proposal["config"].(map[string]any); cfg["correct"] != float64(a+b) || g["baseRevision"] != 1.0 || g["region"] != "global" {
		t.Fatalf("regeneration %v", g)
	}
	// Proposing changes nothing yet.
	if cur := e.do("GET", "/exams/"+exam+"/questions/"+qid, teacher, nil).must(t, http.StatusOK).body; cur["revision"] != 1.0 {
		t.Fatalf("question before accepting %v", cur)
	}

	accepted := e.do("POST", "/question-regenerations/"+str(g, "id")+"/accept", teacher, map[string]any{}).must(t, http.StatusOK).body
	if accepted["revision"] != 2.0 || accepted["prompt"] != proposal["prompt"] {
		t.Fatalf("accepted question %v", accepted)
	}
	if r := e.do("POST", "/question-regenerations/"+str(g, "id")+"/accept", teacher, nil); r.status != http.StatusConflict || r.reason() != "REGENERATION_ALREADY_ACCEPTED" {
		t.Fatalf("second accept: %d %s", r.status, r.raw)
	}
	g = e.do("GET", "/question-regenerations/"+str(g, "id"), teacher, nil).must(t, http.StatusOK).body
	if g["acceptedRevision"] != 2.0 || g["acceptedAt"] == nil {
		t.Fatalf("accepted regeneration %v", g)
	}

	// An edit is a revision too; a proposal made before it can no longer
	// be accepted.
	stale := e.regenerate(teacher, exam, qid, map[string]any{"instructions": "harder"})
	pts := 5.0
	if _, err := e.app.Assessment.UpdateQuestion(tenancy.WithCaller(t.Context(), tenancy.SystemCaller(tn.org.ID)), exam, qid, assessment.QuestionPatch{Points: &pts}); err != nil {
		t.Fatalf("DEBUG %v", err)
	}
	if r := e.do("POST", "/question-regenerations/"+str(stale, "id")+"/accept", teacher, nil); r.status != http.StatusConflict || r.reason() != "QUESTION_CHANGED" {
		t.Fatalf("accepting a stale proposal: %d %s", r.status, r.raw)
	}

	// The revisions, newest first, page by page.
	page := e.do("GET", "/exams/"+exam+"/questions/"+qid+"/revisions?pageSize=2", teacher, nil).must(t, http.StatusOK).body
	revs := page["revisions"].([]any)
	if len(revs) != 2 || revs[0].(map[string]any)["revision"] != 3.0 || revs[0].(map[string]any)["source"] != "edited" ||
		revs[1].(map[string]any)["source"] != "regenerated" || revs[1].(map[string]any)["regenerationId"] != g["id"] {
		t.Fatalf("first page %v", page)
	}
	page = e.do("GET", "/exams/"+exam+"/questions/"+qid+"/revisions?pageSize=2&pageToken="+str(page, "nextPageToken"), teacher, nil).must(t, http.StatusOK).body
	revs = page["revisions"].([]any)
	if first := revs[0].(map[string]any); len(revs) != 1 || first["revision"] != 1.0 || first["prompt"] != "How much is 3 + 4?" || first["points"] != 2.0 || str(page, "nextPageToken") != "" {
		t.Fatalf("last page %v", page)
	}

	// The early result still shows what its student answered: revision 1,
	// worth 2 points, fully scored. A new answer of 7 is wrong now.
	early = e.do("GET", "/exams/"+exam+"/results/"+str(early, "id"), teacher, nil).must(t, http.StatusOK).body
	ea := early["answers"].([]any)[0].(map[string]any)
	if early["score"] != 2.0 || early["maxScore"] != 2.0 || ea["questionRevision"] != 1.0 || ea["maxScore"] != 2.0 || ea["score"] != 2.0 {
		t.Fatalf("early result after revisions %v", early)
	}
	late := answer(7)
	la := late["answers"].([]any)[0].(map[string]any)
	if late["score"] != 0.0 || late["maxScore"] != 5.0 || la["questionRevision"] != 3.0 {
		t.Fatalf("late result %v", late)
	}
	// The item statistics describe the current revision only.
	quality := e.do("GET", "/exams/"+exam+"/questions/"+qid+"/quality", teacher, nil).must(t, http.StatusOK).body
	if st := quality["statistics"].(map[string]any); st["responses"] != 1.0 || st["difficulty"] != 0.0 {
		t.Fatalf("quality %v", quality)
	}

	e.auditEntry(tn, "question_regeneration.requested", tn.users[tenancy.RoleTeacher].ID, "question_regeneration", str(g, "id"))
	e.auditEntry(tn, "question_regeneration.completed", "regeneration", "question_regeneration", str(g, "id"))
	e.auditEntry(tn, "question_regeneration.accepted", tn.users[tenancy.RoleTeacher].ID, "question_regeneration", str(g, "id"))
	waitMetric(t, e, `assessd_question_regenerations_total{org="`+tn.org.ID+`",outcome="ready",region="global"}`, func(v float64) bool { return v == 2 })
}

// TestRegenerationOfDeprecatedAndSharedTypes regenerates questions whose
// type is deprecated, or another organization's enabled public type, and
// accepts the proposals.
func TestRegenerationOfDeprecatedAndSharedTypes(t *testing.T) {
	t.Parallel()
	e := newWorkflowEnv(t, func(string) ai.Provider { return ai.NewBuiltin() })
	owner, user := e.newTenant("US", "pro"), e.newTenant("FR", "pro")
	ok, uk := owner.keys[tenancy.RoleTeacher], user.keys[tenancy.RoleTeacher]

	typ := str(e.do("POST", "/question-types", ok, map[string]any{"key": "word_count", "name": "Word count", "public": true,
		"configSchema":       map[string]any{"type": "object", "required": []any{"words"}, "properties": map[string]any{"words": map[string]any{"type": "integer", "minimum": 1}}},
		"responseProcessing": map[string]any{"condition": `=$count($split($trim(answer.value), " ")) = config.words`}}).must(t, http.StatusOK).body, "id")
	e.do("POST", "/question-types/"+typ+"/enable", uk, map[string]any{}).must(t, http.StatusOK)
	question := func(key string) (exam, id string) {
		exam = str(e.do("POST", "/exams", key, map[string]any{"name": "Words", "language": "en"}).must(t, http.StatusOK).body, "id")
		id = str(e.do("POST", "/exams/"+exam+"/questions", key, map[string]any{"type": typ, "prompt": "Describe the sea in 4 words.",
			"config": map[string]any{"words": 4}}).must(t, http.StatusOK).body, "id")
		return exam, id
	}
	ownExam, ownQ := question(ok)
	sharedExam, sharedQ := question(uk)
	e.do("PATCH", "/question-types/"+typ, ok, map[string]any{"deprecated": true}).must(t, http.StatusOK)

	for _, c := range []struct {
		key, exam, question string
	}{{ok, ownExam, ownQ}, {uk, sharedExam, sharedQ}} {
		g := e.regenerate(c.key, c.exam, c.question, nil)
		e.do("POST", "/question-regenerations/"+str(g, "id")+"/accept", c.key, nil).must(t, http.StatusOK)
		q := e.do("GET", "/exams/"+c.exam+"/questions/"+c.question, c.key, nil).must(t, http.StatusOK).body
		if q["revision"] != 2.0 || q["type"] != typ {
			t.Fatalf("regenerated question %v", q)
		}
	}

}

// TestRegenerationRefusals needs no workflow engine: the regeneration stays
// running in the outbox. Another organization's ids are 404, bad input is
// 400, and nothing can be accepted before the proposal is ready.
func TestRegenerationRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	owner, other := e.newTenant("US", "pro"), e.newTenant("FR", "pro")
	ok, uk := owner.keys[tenancy.RoleTeacher], other.keys[tenancy.RoleTeacher]
	ownExam := str(e.do("POST", "/exams", ok, map[string]any{"name": "Sums", "language": "en"}).must(t, http.StatusOK).body, "id")
	ownQ := str(e.do("POST", "/exams/"+ownExam+"/questions", ok, map[string]any{"type": "numeric", "prompt": "How much is 3 + 4?",
		"config": map[string]any{"correct": 7}}).must(t, http.StatusOK).body, "id")
	g := e.do("POST", "/exams/"+ownExam+"/questions/"+ownQ+"/regenerations", ok, map[string]any{}).must(t, http.StatusOK).body
	if r := e.do("POST", "/question-regenerations/"+str(g, "id")+"/accept", ok, nil); r.status != http.StatusConflict || r.reason() != "REGENERATION_NOT_READY" {
		t.Fatalf("accept while running: %d %s", r.status, r.raw)
	}
	for _, r := range []response{
		e.do("GET", "/question-regenerations/"+str(g, "id"), uk, nil),
		e.do("POST", "/question-regenerations/"+str(g, "id")+"/accept", uk, nil),
		e.do("POST", "/exams/"+ownExam+"/questions/"+ownQ+"/regenerations", uk, map[string]any{}),
		e.do("GET", "/exams/"+ownExam+"/questions/"+ownQ+"/revisions", uk, nil),
	} {
		if r.status != http.StatusNotFound {
			t.Fatalf("foreign id: %d %s", r.status, r.raw)
		}
	}
	// A student may not regenerate.
	e.do("POST", "/exams/"+ownExam+"/questions/"+ownQ+"/regenerations", owner.keys[tenancy.RoleStudent], nil).must(t, http.StatusForbidden)

	for _, c := range []struct {
		name, path string
		body       any
		field      string
	}{
		{"long instructions", "/exams/" + ownExam + "/questions/" + ownQ + "/regenerations", map[string]any{"instructions": strings.Repeat("x", 501)}, "instructions"},
		{"control characters", "/exams/" + ownExam + "/questions/" + ownQ + "/regenerations", map[string]any{"instructions": "a\x00b"}, "instructions"},
		{"unknown field", "/exams/" + ownExam + "/questions/" + ownQ + "/regenerations", map[string]any{"instruction": "x"}, ""},
		{"mistyped field", "/exams/" + ownExam + "/questions/" + ownQ + "/regenerations", `{"instructions": 3}`, ""},
		{"bad question id", "/exams/" + ownExam + "/questions/qst_nope/regenerations", nil, "questionId"},
		{"bad regeneration id", "/question-regenerations/rgn_nope/accept", nil, "id"},
	} {
		r := e.do("POST", c.path, ok, c.body)
		if r.status != http.StatusBadRequest || (c.field != "" && r.field() != c.field) {
			t.Errorf("%s: %d %s", c.name, r.status, r.raw)
		}
	}
	if r := e.do("GET", "/exams/"+ownExam+"/questions/"+ownQ+"/revisions?pageToken=djE6eA", ok, nil); r.status != http.StatusBadRequest {
		t.Errorf("bad page token: %d %s", r.status, r.raw)
	}

	// The question is deleted while its regeneration runs: the workflow's
	// calls learn that it cannot be regenerated, which they do not retry.
	e.do("DELETE", "/exams/"+ownExam+"/questions/"+ownQ, ok, nil).must(t, http.StatusOK)
	regen := regeneration.NewService(e.db, e.app.Assessment)
	wctx := store.WithOrg(context.Background(), owner.org.ID)
	if _, err := regen.Request(wctx, str(g, "id")); !errors.Is(err, regeneration.ErrCannotRegenerate) {
		t.Errorf("request of a deleted question's regeneration: %v", err)
	}
	if _, err := regen.Propose(wctx, str(g, "id"), ai.RegeneratedQuestion{Prompt: "How much is 1 + 2?"}); !errors.Is(err, regeneration.ErrCannotRegenerate) {
		t.Errorf("proposal for a deleted question's regeneration: %v", err)
	}
}

// TestRegenerationRacingTheQuestionsDeletion asks for a regeneration while
// its question's deletion commits: the question is not found, as it
// would be a moment later, rather than a server fault.
func TestRegenerationRacingTheQuestionsDeletion(t *testing.T) {
	t.Parallel()
	url := storetest.NewURL(t)
	e := newEnvAt(t, url)
	teacher := e.newTenant("US", "pro").keys[tenancy.RoleTeacher]
	exam := str(e.do("POST", "/exams", teacher, map[string]any{"name": "Sums", "language": "en"}).must(t, http.StatusOK).body, "id")
	q := str(e.do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{"type": "numeric", "prompt": "How much is 3 + 4?",
		"config": map[string]any{"correct": 7}}).must(t, http.StatusOK).body, "id")
	var r response
	_ = storetest.DeleteDuring(t, url, `DELETE FROM questions WHERE id = $1`, []any{q}, func() error {
		r = e.do("POST", "/exams/"+exam+"/questions/"+q+"/regenerations", teacher, map[string]any{})
		return nil
	})
	if r.status != http.StatusNotFound || r.reason() != "QUESTION_NOT_FOUND" {
		t.Fatalf("regenerating a question as it is deleted: %d %s", r.status, r.raw)
	}
}

// recordingProvider is an OpenAI-compatible endpoint that records the
// questions it was asked to regenerate and proposes a fixed question.
type recordingProvider struct {
	*httptest.Server
	mu      sync.Mutex
	prompts []string
}

// aSum is the question recordingProviders propose unless told otherwise.
var aSum = map[string]any{"prompt": "How much is 10 + 20?", "config": map[string]any{"correct": 30, "tolerance": 0}, "points": 3}

func newRecordingProvider(t *testing.T, proposal map[string]any) *recordingProvider {
	p := &recordingProvider{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.prompts = append(p.prompts, string(body))
		p.mu.Unlock()
		content, _ := json.Marshal(proposal)
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": string(content)}}}})
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *recordingProvider) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.prompts...)
}

// TestRegenerationStaysInItsRegion regenerates an EU organization's
// question: only the EU endpoint sees it, never the global one.
func TestRegenerationStaysInItsRegion(t *testing.T) {
	t.Parallel()
	endpoints := map[string]*recordingProvider{"eu": newRecordingProvider(t, aSum), "global": newRecordingProvider(t, aSum)}
	e := newWorkflowEnv(t, func(region string) ai.Provider {
		return ai.NewOpenAI(ai.OpenAIConfig{BaseURL: endpoints[region].URL, APIKey: "test-key", Model: "m"})
	})
	for _, region := range []string{"eu", "global"} {
		tn := e.newTenant("DE", "pro")
		e.do("PATCH", "/org", tn.keys[tenancy.RoleOwner], map[string]any{"settings": map[string]any{"aiRegion": region}}).must(t, http.StatusOK)
		teacher := tn.keys[tenancy.RoleTeacher]
		exam := str(e.do("POST", "/exams", teacher, map[string]any{"name": "Sums", "language": "de"}).must(t, http.StatusOK).body, "id")
		prompt := "How much is 1 + 2 in " + region + "?"
		qid := str(e.do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{"type": "numeric", "prompt": prompt,
			"config": map[string]any{"correct": 3}}).must(t, http.StatusOK).body, "id")
		g := e.regenerate(teacher, exam, qid, map[string]any{"instructions": "larger numbers"})
		if g["region"] != region || g["proposal"].(map[string]any)["points"] != 3.0 {
			t.Fatalf("%s regeneration %v", region, g)
		}
		other := map[string]string{"eu": "global", "global": "eu"}[region]
		for _, body := range endpoints[other].requests() {
			if strings.Contains(body, prompt) {
				t.Fatalf("the %s endpoint saw the %s question: %s", other, region, body)
			}
		}
		if got := endpoints[region].requests(); len(got) != 1 || !strings.Contains(got[0], prompt) || !strings.Contains(got[0], "larger numbers") {
			t.Fatalf("the %s endpoint saw %q", region, got)
		}
	}
}

// TestRegenerationNeverProposesTheQuestionUnchanged regenerates a question
// of a custom type with a text answer, no numbers and no options. The
// builtin provider rewords an English prompt for a younger audience, and
// fails a Spanish one, for which it has no rewordings, saying so. An
// OpenAI-compatible provider that answers the question unchanged (but for
// spacing and number notation) fails it too. A failed regeneration cannot
// be accepted.
func TestRegenerationNeverProposesTheQuestionUnchanged(t *testing.T) {
	t.Parallel()
	const prompt = "Describe the sea in a few words."
	config := map[string]any{"modelAnswer": "Blue, deep and salty."}
	same := newRecordingProvider(t, map[string]any{"prompt": " " + prompt + "\n", "config": config, "points": 2.0})
	e := newWorkflowEnv(t, func(region string) ai.Provider {
		if region == "eu" {
			return ai.NewOpenAI(ai.OpenAIConfig{BaseURL: same.URL, APIKey: "test-key", Model: "m"})
		}
		return ai.NewBuiltin()
	})
	question := func(tn tenant, language string) (teacher, exam, id string) {
		teacher = tn.keys[tenancy.RoleTeacher]
		typ := str(e.do("POST", "/question-types", teacher, map[string]any{"key": "model_answer", "name": "Model answer",
			"configSchema": map[string]any{"type": "object", "required": []any{"modelAnswer"},
				"properties": map[string]any{"modelAnswer": map[string]any{"type": "string", "minLength": 1}}},
			"responseProcessing": map[string]any{"condition": `=$lowercase($trim(answer.value)) = $lowercase(config.modelAnswer)`}}).must(t, http.StatusOK).body, "id")
		exam = str(e.do("POST", "/exams", teacher, map[string]any{"name": "The sea", "language": language}).must(t, http.StatusOK).body, "id")
		id = str(e.do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{"type": typ, "prompt": prompt,
			"config": config, "points": 2}).must(t, http.StatusOK).body, "id")
		return teacher, exam, id
	}
	failed := func(teacher, exam, id, reason string) {
		t.Helper()
		r := e.do("POST", "/exams/"+exam+"/questions/"+id+"/regenerations", teacher, map[string]any{"instructions": "reword for a younger audience"}).
			must(t, http.StatusOK).body
		g := waitStatus(t, e, "/question-regenerations/"+str(r, "id"), teacher, "failed").body
		if g["error"] != reason || g["proposal"] != nil {
			t.Fatalf("failed regeneration %v, want error %q", g, reason)
		}
		if r := e.do("POST", "/question-regenerations/"+str(g, "id")+"/accept", teacher, nil); r.status != http.StatusConflict || r.reason() != "REGENERATION_NOT_READY" {
			t.Fatalf("accepting a failed regeneration: %d %s", r.status, r.raw)
		}
	}

	teacher, exam, id := question(e.newTenant("US", "pro"), "en")
	proposal := e.regenerate(teacher, exam, id, map[string]any{"instructions": "reword for a younger audience"})["proposal"].(map[string]any)
	if p := str(proposal, "prompt"); p == prompt || !strings.HasSuffix(p, " "+prompt) || proposal["points"] != 2.0 ||
		proposal["config"].(map[string]any)["modelAnswer"] != config["modelAnswer"] {
		t.Fatalf("builtin proposal %v", proposal)
	}

	teacher, exam, id = question(e.newTenant("US", "pro"), "es")
	failed(teacher, exam, id, ai.ErrCannotRephrase.Error())

	eu := e.newTenant("DE", "pro")
	e.do("PATCH", "/org", eu.keys[tenancy.RoleOwner], map[string]any{"settings": map[string]any{"aiRegion": "eu"}}).must(t, http.StatusOK)
	teacher, exam, id = question(eu, "en")
	failed(teacher, exam, id, regeneration.UnchangedReason)
	if len(same.requests()) != 1 {
		t.Fatalf("the provider was asked %d times", len(same.requests()))
	}
	waitMetric(t, e, `assessd_question_regenerations_total{org="`+eu.org.ID+`",outcome="failed",region="eu"}`, func(v float64) bool { return v == 1 })
}

// TestGradingUsesTheAnsweredRevision edits an AI-graded question while its
// answer waits for grading: the grader still gets the revision the student
// answered.
func TestGradingUsesTheAnsweredRevision(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	teacher := tn.keys[tenancy.RoleTeacher]
	exam := str(e.do("POST", "/exams", teacher, map[string]any{"name": "Essays", "language": "en"}).must(t, http.StatusOK).body, "id")
	qid := str(e.do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{"type": "essay", "prompt": "Describe photosynthesis.",
		"points": 4, "config": map[string]any{"rubric": "light"}}).must(t, http.StatusOK).body, "id")
	res := e.do("POST", "/exams/"+exam+"/results", teacher, map[string]any{"userId": tn.users[tenancy.RoleStudent].ID,
		"answers": []any{map[string]any{"questionId": qid, "value": "Plants use light."}}}).must(t, http.StatusOK).body
	e.do("PATCH", "/exams/"+exam+"/questions/"+qid, teacher, map[string]any{"prompt": "Describe respiration.", "points": 6,
		"config": map[string]any{"rubric": "oxygen"}}).must(t, http.StatusOK)
	in, err := e.app.Assessment.GradingInput(store.WithOrg(t.Context(), tn.org.ID), str(res, "id"), qid)
	if err != nil {
		t.Fatal(err)
	}
	if in.Prompt != "Describe photosynthesis." || in.Config["rubric"] != "light" || in.Points != 4 {
		t.Fatalf("grading input %+v: want revision 1", in)
	}
}
