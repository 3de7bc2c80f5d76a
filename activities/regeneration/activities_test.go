package regeneration_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	acts "github.com/assessd/assessd/activities/regeneration"
	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/regeneration"
	wf "github.com/assessd/assessd/workflows/regeneration"
)

// fakeRegenerations serves one numeric question (its prompt and language
// as set) and records the outcome.
type fakeRegenerations struct {
	instructions     string
	prompt, language string
	proposed         *ai.RegeneratedQuestion
	failure          string
	// deleteOnPropose has the question deleted while the provider works.
	deleteOnPropose bool
	proposals       int
}

func (f *fakeRegenerations) Request(context.Context, string) (ai.RegenerateRequest, error) {
	prompt := cmp.Or(f.prompt, "How much is 3 + 4?")
	return ai.RegenerateRequest{QuestionType: "numeric", ConfigSchema: map[string]any{"type": "object"}, Prompt: prompt,
		Config: map[string]any{"correct": 7.0}, Points: 1, Instructions: f.instructions, Language: f.language}, nil
}

func (f *fakeRegenerations) Propose(_ context.Context, _ string, p ai.RegeneratedQuestion) (regeneration.Outcome, error) {
	f.proposals++
	if f.deleteOnPropose {
		return regeneration.Outcome{}, fmt.Errorf("%w: the question was deleted", regeneration.ErrCannotRegenerate)
	}
	f.proposed = &p
	return regeneration.Outcome{Status: regeneration.StatusReady, RequestedAt: time.Now()}, nil
}

func (f *fakeRegenerations) Fail(_ context.Context, _, reason string) (regeneration.Outcome, error) {
	f.failure = reason
	return regeneration.Outcome{Status: regeneration.StatusFailed, RequestedAt: time.Now()}, nil
}

// flakyProvider is the builtin provider failing its first failures calls.
type flakyProvider struct {
	ai.Provider
	failures int32
	calls    atomic.Int32
}

func (p *flakyProvider) RegenerateQuestion(ctx context.Context, req ai.RegenerateRequest) (ai.RegeneratedQuestion, error) {
	if p.calls.Add(1) <= p.failures {
		return ai.RegeneratedQuestion{}, errors.New("provider timeout")
	}
	return p.Provider.RegenerateQuestion(ctx, req)
}

func run(t *testing.T, a *acts.Activities, region string) string {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(wf.RegenerateQuestion)
	env.RegisterActivityWithOptions(a.ProposeQuestion, activity.RegisterOptions{Name: wf.ActivityProposeQuestion})
	env.RegisterActivityWithOptions(a.RecordProposal, activity.RegisterOptions{Name: wf.ActivityRecordProposal})
	env.RegisterActivityWithOptions(a.FailRegeneration, activity.RegisterOptions{Name: wf.ActivityFailRegeneration})
	env.ExecuteWorkflow(wf.RegenerateQuestion, wf.Input{OrgID: "org_1", RegenerationID: "rgn_1", Region: region})
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	var status string
	if err := env.GetWorkflowResult(&status); err != nil {
		t.Fatal(err)
	}
	return status
}

func TestRegenerateQuestion(t *testing.T) {
	for _, c := range []struct {
		name, region, instructions string
		prompt, language           string
		failures                   int32
		deleted                    bool
		wantStatus, wantFailure    string
		wantCalls                  int32
	}{
		{name: "ready after a transient failure", region: "eu", failures: 1, wantStatus: "ready", wantCalls: 2},
		{name: "invalid request is not retried", region: "eu", instructions: strings.Repeat("x", ai.MaxInstructionsLength+1),
			wantStatus: "failed", wantFailure: "the AI provider rejected the regeneration request", wantCalls: 1},
		{name: "a question the builtin provider cannot vary is not retried", region: "eu", prompt: "¿Cuántos días tiene una semana?", language: "es",
			wantStatus: "failed", wantFailure: ai.ErrCannotRephrase.Error(), wantCalls: 1},
		{name: "another region's task is refused", region: "global", wantStatus: "failed", wantFailure: "a global regeneration reached a eu worker"},
		{name: "provider down after retries", region: "eu", failures: 100, wantStatus: "failed", wantFailure: "provider timeout", wantCalls: 5},
		{name: "question deleted meanwhile is not retried", region: "eu", deleted: true, wantStatus: "failed",
			wantFailure: "the question cannot be regenerated: the question was deleted", wantCalls: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := &fakeRegenerations{instructions: c.instructions, prompt: c.prompt, language: c.language, deleteOnPropose: c.deleted}
			provider := &flakyProvider{Provider: ai.NewBuiltin(), failures: c.failures}
			reg := prometheus.NewRegistry()
			a := &acts.Activities{Regenerations: store, Provider: provider, Region: "eu", Metrics: acts.NewMetrics(reg, func(id string) string { return id })}
			if got := run(t, a, c.region); got != c.wantStatus || store.failure != c.wantFailure || provider.calls.Load() != c.wantCalls {
				t.Fatalf("status %q, failure %q, provider calls %d", got, store.failure, provider.calls.Load())
			}
			// Counted once, for the organization of the workflow's input.
			want := fmt.Sprintf(`
				# HELP assessd_question_regenerations_total Question regenerations finished, by organization, region and outcome (ready, failed).
				# TYPE assessd_question_regenerations_total counter
				assessd_question_regenerations_total{org="org_1",outcome="failed",region="eu"} %d
				assessd_question_regenerations_total{org="org_1",outcome="ready",region="eu"} %d
			`, boolInt(c.wantStatus == "failed"), boolInt(c.wantStatus == "ready"))
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "assessd_question_regenerations_total"); err != nil {
				t.Error(err)
			}
			if c.deleted && store.proposals != 1 {
				t.Fatalf("recording the proposal was tried %d times", store.proposals)
			}
			if c.wantStatus == "ready" && (store.proposed == nil || store.proposed.Prompt == "How much is 3 + 4?") {
				t.Fatalf("proposal %+v", store.proposed)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
