package ai_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/observability/promreg/promregtest"
)

// stubProvider fails every call with err.
type stubProvider struct{ err error }

func (s stubProvider) Grade(context.Context, ai.GradeRequest) (ai.Grade, error) {
	return ai.Grade{}, s.err
}

func (s stubProvider) GenerateQuestions(context.Context, ai.GenerateRequest) ([]ai.GeneratedQuestion, error) {
	return nil, s.err
}

func (s stubProvider) RegenerateQuestion(context.Context, ai.RegenerateRequest) (ai.RegeneratedQuestion, error) {
	return ai.RegeneratedQuestion{}, s.err
}

func (s stubProvider) Transcribe(context.Context, ai.TranscribeRequest) (ai.Transcription, error) {
	return ai.Transcription{}, s.err
}

func TestInstrumentCountsOutcomes(t *testing.T) {
	reg := prometheus.NewRegistry()
	ctx := context.Background()
	// Two regions and providers on one registry, as the dev server runs
	// both workers in one process.
	eu := ai.Instrument(ai.NewBuiltin(), "builtin", "eu", reg)
	global := ai.Instrument(stubProvider{err: fmt.Errorf("%w: status 400", ai.ErrInvalidRequest)}, "openai", "global", reg)
	flaky := ai.Instrument(stubProvider{err: errors.New("status 503")}, "openai", "global", reg)

	// The calls' outcomes are what the metrics below count.
	_, _ = eu.Grade(ctx, ai.GradeRequest{Answer: "x", MaxScore: 1})
	_, _ = eu.GenerateQuestions(ctx, ai.GenerateRequest{Subject: "x"})
	_, _ = global.Grade(ctx, ai.GradeRequest{})
	_, _ = flaky.Grade(ctx, ai.GradeRequest{Region: "global"})
	_, _ = flaky.Grade(ctx, ai.GradeRequest{Region: "global"})

	for _, tc := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"region": "eu", "provider": "builtin", "operation": "grade", "outcome": "ok"}, 1},
		{map[string]string{"region": "eu", "provider": "builtin", "operation": "generate", "outcome": "ok"}, 1},
		{map[string]string{"region": "global", "provider": "openai", "operation": "grade", "outcome": "invalid_request"}, 1},
		{map[string]string{"region": "global", "provider": "openai", "operation": "grade", "outcome": "retryable_error"}, 2},
	} {
		if got := promregtest.Counter(t, reg, "assessd_ai_requests_total", tc.labels); got != tc.want {
			t.Errorf("requests %v = %v, want %v", tc.labels, got, tc.want)
		}
	}
	h := promregtest.Find(t, reg, "assessd_ai_request_duration_seconds", map[string]string{"region": "global", "provider": "openai", "operation": "grade"})
	if got := h.GetHistogram().GetSampleCount(); got != 3 {
		t.Errorf("duration samples %d, want 3", got)
	}
}
