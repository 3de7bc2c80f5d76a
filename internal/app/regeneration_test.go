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
	"github.com/assessd/assessd/internal/testkit/apptest"
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
	e := apptest.NewWithConfig(t, func(c *app.Config) {
		c.Temporal = tc
		c.Dispatch = workflows.DispatchOptions{Sweep: 200 * time.Millisecond}
	})
	startRegionWorkers(t, tc, e, providers)
	return e
}

func startRegionWorkers(t *testing.T, tc client.Client, e *env, providers func(region string) ai.Provider) {
	t.Helper()
	// The workers' metrics go to the app's registry, served on /metrics.
	reg := e.App.Metrics.Registry
	grading := gradingactivities.NewMetrics(reg, e.App.Metrics.Org)
	for _, region := range []string{"eu", "global"} {
		w, err := app.NewWorker(tc, e.DB, app.WorkerConfig{Region: region, Provider: providers(region), Fetcher: media.NewFetcher(nil, media.Options{}),
			Metrics: grading, Registry: reg, OrgLabel: e.App.Metrics.Org})
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
func regenerate(e *env, key, exam, question string, body any) map[string]any {
	e.T.Helper()
	r := e.Do("POST", "/exams/"+exam+"/questions/"+question+"/regenerations", key, body).Must(e.T, http.StatusOK).Body
	if r["status"] != "running" || !strings.HasPrefix(apptest.Str(r, "id"), "rgn_") {
		e.T.Fatalf("started regeneration %v", r)
	}
	return waitStatus(e.T, e, "/question-regenerations/"+apptest.Str(r, "id"), key, "ready").Body
}

// TestQuestionRegenerationOverHTTP regenerates a question with the builtin
// provider end to end, accepts the proposal, and checks that an earlier
// result keeps the revision it answered, with its score and points.
func TestQuestionRegenerationOverHTTP(t *testing.T) {
	t.Parallel()
	e := newWorkflowEnv(t, func(string) ai.Provider { return ai.NewBuiltin() })
	tn := e.NewTenant("US", "pro")
	teacher, student := tn.Keys[tenancy.RoleTeacher], tn.Users[tenancy.RoleStudent].ID

	exam := apptest.Str(e.Do("POST", "/exams", teacher, map[string]any{"name": "Sums", "language": "en"}).Must(t, http.StatusOK).Body, "id")
	q := e.Do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{"type": "numeric", "prompt": "How much is 3 + 4?",
		"config": map[string]any{"correct": 7, "tolerance": 0}, "points": 2}).Must(t, http.StatusOK).Body
	qid := apptest.Str(q, "id")
	if q["revision"] != 1.0 {
		t.Fatalf("new question revision %v", q["revision"])
	}
	answer := func(v any) map[string]any {
		return e.Do("POST", "/exams/"+exam+"/results", teacher, map[string]any{"userId": student,
			"answers": []any{map[string]any{"questionId": qid, "value": v}}}).Must(t, http.StatusOK).Body
	}
	early := answer(7)
	if early["score"] != 2.0 {
		t.Fatalf("early result %v", early)
	}

	g := regenerate(e, teacher, exam, qid, map[string]any{"instructions": "change the numbers"})
	proposal := g["proposal"].(map[string]any)
	var a, b int
	if n, _ := fmt.Sscanf(apptest.Str(proposal, "prompt"), "How much is %d + %d?", &a, &b); n != 2 || a+b == 7 {
		t.Fatalf("proposal %v", proposal)
	}
	if cfg := proposal["config"].(map[string]any); cfg["correct"] != float64(a+b) || g["baseRevision"] != 1.0 || g["region"] != "global" {
		t.Fatalf("regeneration %v", g)
	}
	// Proposing changes nothing yet.
	if cur := e.Do("GET", "/exams/"+exam+"/questions/"+qid, teacher, nil).Must(t, http.StatusOK).Body; cur["revision"] != 1.0 {
		t.Fatalf("question before accepting %v", cur)
	}

	accepted := e.Do("POST", "/question-regenerations/"+apptest.Str(g, "id")+"/accept", teacher, map[string]any{}).Must(t, http.StatusOK).Body
	if accepted["revision"] != 2.0 || accepted["prompt"] != proposal["prompt"] {
		t.Fatalf("accepted question %v", accepted)
	}
	if r := e.Do("POST", "/question-regenerations/"+apptest.Str(g, "id")+"/accept", teacher, nil); r.Status != http.StatusConflict || r.Reason() != "REGENERATION_ALREADY_ACCEPTED" {
		t.Fatalf("second accept: %d %s", r.Status, r.Raw)
	}
	g = e.Do("GET", "/question-regenerations/"+apptest.Str(g, "id"), teacher, nil).Must(t, http.StatusOK).Body
	if g["acceptedRevision"] != 2.0 || g["acceptedAt"] == nil {
		t.Fatalf("accepted regeneration %v", g)
	}

	// An edit is a revision too; a proposal made before it can no longer
	// be accepted.
	stale := regenerate(e, teacher, exam, qid, map[string]any{"instructions": "harder"})
	pts := 5.0
	if _, err := e.App.Assessment.UpdateQuestion(tenancy.WithCaller(t.Context(), tenancy.SystemCaller(tn.Org.ID)), exam, qid, assessment.QuestionPatch{Points: &pts}); err != nil {
		t.Fatalf("DEBUG %v", err)
	}
	if r := e.Do("POST", "/question-regenerations/"+apptest.Str(stale, "id")+"/accept", teacher, nil); r.Status != http.StatusConflict || r.Reason() != "QUESTION_CHANGED" {
		t.Fatalf("accepting a stale proposal: %d %s", r.Status, r.Raw)
	}

	// The revisions, newest first, page by page.
	page := e.Do("GET", "/exams/"+exam+"/questions/"+qid+"/revisions?pageSize=2", teacher, nil).Must(t, http.StatusOK).Body
	revs := page["revisions"].([]any)
	if len(revs) != 2 || revs[0].(map[string]any)["revision"] != 3.0 || revs[0].(map[string]any)["source"] != "edited" ||
		revs[1].(map[string]any)["source"] != "regenerated" || revs[1].(map[string]any)["regenerationId"] != g["id"] {
		t.Fatalf("first page %v", page)
	}
	page = e.Do("GET", "/exams/"+exam+"/questions/"+qid+"/revisions?pageSize=2&pageToken="+apptest.Str(page, "nextPageToken"), teacher, nil).Must(t, http.StatusOK).Body
	revs = page["revisions"].([]any)
	if first := revs[0].(map[string]any); len(revs) != 1 || first["revision"] != 1.0 || first["prompt"] != "How much is 3 + 4?" || first["points"] != 2.0 || apptest.Str(page, "nextPageToken") != "" {
		t.Fatalf("last page %v", page)
	}

	// The early result still shows what its student answered: revision 1,
	// worth 2 points, fully scored. A new answer of 7 is wrong now.
	early = e.Do("GET", "/exams/"+exam+"/results/"+apptest.Str(early, "id"), teacher, nil).Must(t, http.StatusOK).Body
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
	quality := e.Do("GET", "/exams/"+exam+"/questions/"+qid+"/quality", teacher, nil).Must(t, http.StatusOK).Body
	if st := quality["statistics"].(map[string]any); st["responses"] != 1.0 || st["difficulty"] != 0.0 {
		t.Fatalf("quality %v", quality)
	}

	auditEntry(e, tn, "question_regeneration.requested", tn.Users[tenancy.RoleTeacher].ID, "question_regeneration", apptest.Str(g, "id"))
	auditEntry(e, tn, "question_regeneration.completed", "regeneration", "question_regeneration", apptest.Str(g, "id"))
	auditEntry(e, tn, "question_regeneration.accepted", tn.Users[tenancy.RoleTeacher].ID, "question_regeneration", apptest.Str(g, "id"))
	waitMetric(t, e, `assessd_question_regenerations_total{org="`+tn.Org.ID+`",outcome="ready",region="global"}`, func(v float64) bool { return v == 2 })
}

// TestRegenerationOfDeprecatedAndSharedTypes regenerates questions whose
// type is deprecated, or another organization's enabled public type, and
// accepts the proposals.
func TestRegenerationOfDeprecatedAndSharedTypes(t *testing.T) {
	t.Parallel()
	e := newWorkflowEnv(t, func(string) ai.Provider { return ai.NewBuiltin() })
	owner, user := e.NewTenant("US", "pro"), e.NewTenant("FR", "pro")
	ok, uk := owner.Keys[tenancy.RoleTeacher], user.Keys[tenancy.RoleTeacher]

	typ := apptest.Str(e.Do("POST", "/question-types", ok, map[string]any{"key": "word_count", "name": "Word count", "public": true,
		"configSchema":       map[string]any{"type": "object", "required": []any{"words"}, "properties": map[string]any{"words": map[string]any{"type": "integer", "minimum": 1}}},
		"responseProcessing": map[string]any{"condition": `=$count($split($trim(answer.value), " ")) = config.words`}}).Must(t, http.StatusOK).Body, "id")
	e.Do("POST", "/question-types/"+typ+"/enable", uk, map[string]any{}).Must(t, http.StatusOK)
	question := func(key string) (exam, id string) {
		exam = apptest.Str(e.Do("POST", "/exams", key, map[string]any{"name": "Words", "language": "en"}).Must(t, http.StatusOK).Body, "id")
		id = apptest.Str(e.Do("POST", "/exams/"+exam+"/questions", key, map[string]any{"type": typ, "prompt": "Describe the sea in 4 words.",
			"config": map[string]any{"words": 4}}).Must(t, http.StatusOK).Body, "id")
		return exam, id
	}
	ownExam, ownQ := question(ok)
	sharedExam, sharedQ := question(uk)
	e.Do("PATCH", "/question-types/"+typ, ok, map[string]any{"deprecated": true}).Must(t, http.StatusOK)

	for _, c := range []struct {
		key, exam, question string
	}{{ok, ownExam, ownQ}, {uk, sharedExam, sharedQ}} {
		g := regenerate(e, c.key, c.exam, c.question, nil)
		e.Do("POST", "/question-regenerations/"+apptest.Str(g, "id")+"/accept", c.key, nil).Must(t, http.StatusOK)
		q := e.Do("GET", "/exams/"+c.exam+"/questions/"+c.question, c.key, nil).Must(t, http.StatusOK).Body
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
	e := apptest.New(t)
	owner, other := e.NewTenant("US", "pro"), e.NewTenant("FR", "pro")
	ok, uk := owner.Keys[tenancy.RoleTeacher], other.Keys[tenancy.RoleTeacher]
	ownExam := apptest.Str(e.Do("POST", "/exams", ok, map[string]any{"name": "Sums", "language": "en"}).Must(t, http.StatusOK).Body, "id")
	ownQ := apptest.Str(e.Do("POST", "/exams/"+ownExam+"/questions", ok, map[string]any{"type": "numeric", "prompt": "How much is 3 + 4?",
		"config": map[string]any{"correct": 7}}).Must(t, http.StatusOK).Body, "id")
	g := e.Do("POST", "/exams/"+ownExam+"/questions/"+ownQ+"/regenerations", ok, map[string]any{}).Must(t, http.StatusOK).Body
	if r := e.Do("POST", "/question-regenerations/"+apptest.Str(g, "id")+"/accept", ok, nil); r.Status != http.StatusConflict || r.Reason() != "REGENERATION_NOT_READY" {
		t.Fatalf("accept while running: %d %s", r.Status, r.Raw)
	}
	for _, r := range []response{
		e.Do("GET", "/question-regenerations/"+apptest.Str(g, "id"), uk, nil),
		e.Do("POST", "/question-regenerations/"+apptest.Str(g, "id")+"/accept", uk, nil),
		e.Do("POST", "/exams/"+ownExam+"/questions/"+ownQ+"/regenerations", uk, map[string]any{}),
		e.Do("GET", "/exams/"+ownExam+"/questions/"+ownQ+"/revisions", uk, nil),
	} {
		if r.Status != http.StatusNotFound {
			t.Fatalf("foreign id: %d %s", r.Status, r.Raw)
		}
	}
	// A student may not regenerate.
	e.Do("POST", "/exams/"+ownExam+"/questions/"+ownQ+"/regenerations", owner.Keys[tenancy.RoleStudent], nil).Must(t, http.StatusForbidden)

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
		r := e.Do("POST", c.path, ok, c.body)
		if r.Status != http.StatusBadRequest || (c.field != "" && r.Field() != c.field) {
			t.Errorf("%s: %d %s", c.name, r.Status, r.Raw)
		}
	}
	if r := e.Do("GET", "/exams/"+ownExam+"/questions/"+ownQ+"/revisions?pageToken=djE6eA", ok, nil); r.Status != http.StatusBadRequest {
		t.Errorf("bad page token: %d %s", r.Status, r.Raw)
	}

	// The question is deleted while its regeneration runs: the workflow's
	// calls learn that it cannot be regenerated, which they do not retry.
	e.Do("DELETE", "/exams/"+ownExam+"/questions/"+ownQ, ok, nil).Must(t, http.StatusOK)
	regen := regeneration.NewService(e.DB, e.App.Assessment)
	wctx := store.WithOrg(context.Background(), owner.Org.ID)
	if _, err := regen.Request(wctx, apptest.Str(g, "id")); !errors.Is(err, regeneration.ErrCannotRegenerate) {
		t.Errorf("request of a deleted question's regeneration: %v", err)
	}
	if _, err := regen.Propose(wctx, apptest.Str(g, "id"), ai.RegeneratedQuestion{Prompt: "How much is 1 + 2?"}); !errors.Is(err, regeneration.ErrCannotRegenerate) {
		t.Errorf("proposal for a deleted question's regeneration: %v", err)
	}
}

// TestRegenerationRacingTheQuestionsDeletion asks for a regeneration while
// its question's deletion commits: the question is not found, as it
// would be a moment later, rather than a server fault.
func TestRegenerationRacingTheQuestionsDeletion(t *testing.T) {
	t.Parallel()
	url := storetest.NewURL(t)
	e := apptest.NewAt(t, url)
	teacher := e.NewTenant("US", "pro").Keys[tenancy.RoleTeacher]
	exam := apptest.Str(e.Do("POST", "/exams", teacher, map[string]any{"name": "Sums", "language": "en"}).Must(t, http.StatusOK).Body, "id")
	q := apptest.Str(e.Do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{"type": "numeric", "prompt": "How much is 3 + 4?",
		"config": map[string]any{"correct": 7}}).Must(t, http.StatusOK).Body, "id")
	var r response
	_ = storetest.DeleteDuring(t, url, `DELETE FROM questions WHERE id = $1`, []any{q}, func() error {
		r = e.Do("POST", "/exams/"+exam+"/questions/"+q+"/regenerations", teacher, map[string]any{})
		return nil
	})
	if r.Status != http.StatusNotFound || r.Reason() != "QUESTION_NOT_FOUND" {
		t.Fatalf("regenerating a question as it is deleted: %d %s", r.Status, r.Raw)
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
		tn := e.NewTenant("DE", "pro")
		e.Do("PATCH", "/org", tn.Keys[tenancy.RoleOwner], map[string]any{"settings": map[string]any{"aiRegion": region}}).Must(t, http.StatusOK)
		teacher := tn.Keys[tenancy.RoleTeacher]
		exam := apptest.Str(e.Do("POST", "/exams", teacher, map[string]any{"name": "Sums", "language": "de"}).Must(t, http.StatusOK).Body, "id")
		prompt := "How much is 1 + 2 in " + region + "?"
		qid := apptest.Str(e.Do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{"type": "numeric", "prompt": prompt,
			"config": map[string]any{"correct": 3}}).Must(t, http.StatusOK).Body, "id")
		g := regenerate(e, teacher, exam, qid, map[string]any{"instructions": "larger numbers"})
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
		teacher = tn.Keys[tenancy.RoleTeacher]
		typ := apptest.Str(e.Do("POST", "/question-types", teacher, map[string]any{"key": "model_answer", "name": "Model answer",
			"configSchema": map[string]any{"type": "object", "required": []any{"modelAnswer"},
				"properties": map[string]any{"modelAnswer": map[string]any{"type": "string", "minLength": 1}}},
			"responseProcessing": map[string]any{"condition": `=$lowercase($trim(answer.value)) = $lowercase(config.modelAnswer)`}}).Must(t, http.StatusOK).Body, "id")
		exam = apptest.Str(e.Do("POST", "/exams", teacher, map[string]any{"name": "The sea", "language": language}).Must(t, http.StatusOK).Body, "id")
		id = apptest.Str(e.Do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{"type": typ, "prompt": prompt,
			"config": config, "points": 2}).Must(t, http.StatusOK).Body, "id")
		return teacher, exam, id
	}
	failed := func(teacher, exam, id, reason string) {
		t.Helper()
		r := e.Do("POST", "/exams/"+exam+"/questions/"+id+"/regenerations", teacher, map[string]any{"instructions": "reword for a younger audience"}).
			Must(t, http.StatusOK).Body
		g := waitStatus(t, e, "/question-regenerations/"+apptest.Str(r, "id"), teacher, "failed").Body
		if g["error"] != reason || g["proposal"] != nil {
			t.Fatalf("failed regeneration %v, want error %q", g, reason)
		}
		if r := e.Do("POST", "/question-regenerations/"+apptest.Str(g, "id")+"/accept", teacher, nil); r.Status != http.StatusConflict || r.Reason() != "REGENERATION_NOT_READY" {
			t.Fatalf("accepting a failed regeneration: %d %s", r.Status, r.Raw)
		}
	}

	teacher, exam, id := question(e.NewTenant("US", "pro"), "en")
	proposal := regenerate(e, teacher, exam, id, map[string]any{"instructions": "reword for a younger audience"})["proposal"].(map[string]any)
	if p := apptest.Str(proposal, "prompt"); p == prompt || !strings.HasSuffix(p, " "+prompt) || proposal["points"] != 2.0 ||
		proposal["config"].(map[string]any)["modelAnswer"] != config["modelAnswer"] {
		t.Fatalf("builtin proposal %v", proposal)
	}

	teacher, exam, id = question(e.NewTenant("US", "pro"), "es")
	failed(teacher, exam, id, ai.ErrCannotRephrase.Error())

	eu := e.NewTenant("DE", "pro")
	e.Do("PATCH", "/org", eu.Keys[tenancy.RoleOwner], map[string]any{"settings": map[string]any{"aiRegion": "eu"}}).Must(t, http.StatusOK)
	teacher, exam, id = question(eu, "en")
	failed(teacher, exam, id, regeneration.UnchangedReason)
	if len(same.requests()) != 1 {
		t.Fatalf("the provider was asked %d times", len(same.requests()))
	}
	waitMetric(t, e, `assessd_question_regenerations_total{org="`+eu.Org.ID+`",outcome="failed",region="eu"}`, func(v float64) bool { return v == 1 })
}

// TestGradingUsesTheAnsweredRevision edits an AI-graded question while its
// answer waits for grading: the grader still gets the revision the student
// answered.
func TestGradingUsesTheAnsweredRevision(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	teacher := tn.Keys[tenancy.RoleTeacher]
	exam := apptest.Str(e.Do("POST", "/exams", teacher, map[string]any{"name": "Essays", "language": "en"}).Must(t, http.StatusOK).Body, "id")
	qid := apptest.Str(e.Do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{"type": "essay", "prompt": "Describe photosynthesis.",
		"points": 4, "config": map[string]any{"rubric": "light"}}).Must(t, http.StatusOK).Body, "id")
	res := e.Do("POST", "/exams/"+exam+"/results", teacher, map[string]any{"userId": tn.Users[tenancy.RoleStudent].ID,
		"answers": []any{map[string]any{"questionId": qid, "value": "Plants use light."}}}).Must(t, http.StatusOK).Body
	e.Do("PATCH", "/exams/"+exam+"/questions/"+qid, teacher, map[string]any{"prompt": "Describe respiration.", "points": 6,
		"config": map[string]any{"rubric": "oxygen"}}).Must(t, http.StatusOK)
	in, err := e.App.Assessment.GradingInput(store.WithOrg(t.Context(), tn.Org.ID), apptest.Str(res, "id"), qid)
	if err != nil {
		t.Fatal(err)
	}
	if in.Prompt != "Describe photosynthesis." || in.Config["rubric"] != "light" || in.Points != 4 {
		t.Fatalf("grading input %+v: want revision 1", in)
	}
}
