package ai

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/assessd/assessd/observability/promreg"
)

// Outcome label values of assessd_ai_requests_total.
const (
	OutcomeOK             = "ok"
	OutcomeRetryableError = "retryable_error"
	OutcomeInvalidRequest = "invalid_request"
)

// Operation label values.
const (
	OperationGrade      = "grade"
	OperationGenerate   = "generate"
	OperationRegenerate = "regenerate"
	OperationTranscribe = "transcribe"
)

type instrumented struct {
	next     Provider
	provider string
	region   string
	duration *prometheus.HistogramVec
	requests *prometheus.CounterVec
}

// Instrument wraps p so every call is counted and timed by region,
// provider name and operation. The region label is the request's Region,
// or region when the request leaves it empty. Calling Instrument for
// several regions or providers on one registry shares the collectors; a nil
// reg records into unregistered collectors. Like prometheus.MustRegister,
// it panics if reg holds a different metric of the same name.
func Instrument(p Provider, name, region string, reg prometheus.Registerer) Provider {
	m := &instrumented{
		next:     p,
		provider: name,
		region:   region,
		duration: promreg.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "assessd_ai_request_duration_seconds",
			Help:    "AI provider call latency by region, provider and operation.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 20, 40, 80, 160, 300, 600},
		}, []string{"region", "provider", "operation"})),
		requests: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_ai_requests_total",
			Help: "AI provider calls by region, provider, operation and outcome (ok, retryable_error, invalid_request).",
		}, []string{"region", "provider", "operation", "outcome"})),
	}
	// The region's series exist from the start: error ratios are 0, not
	// absent, before the first call.
	for _, op := range []string{OperationGrade, OperationGenerate, OperationRegenerate, OperationTranscribe} {
		for _, outcome := range []string{OutcomeOK, OutcomeRetryableError, OutcomeInvalidRequest} {
			m.requests.WithLabelValues(region, name, op, outcome)
		}
	}
	return m
}

var _ Provider = (*instrumented)(nil)

// Grade calls the wrapped provider and records the call.
func (m *instrumented) Grade(ctx context.Context, req GradeRequest) (Grade, error) {
	start := time.Now()
	g, err := m.next.Grade(ctx, req)
	m.record(req.Region, OperationGrade, start, err)
	return g, err
}

// GenerateQuestions calls the wrapped provider and records the call.
func (m *instrumented) GenerateQuestions(ctx context.Context, req GenerateRequest) ([]GeneratedQuestion, error) {
	start := time.Now()
	qs, err := m.next.GenerateQuestions(ctx, req)
	m.record(req.Region, OperationGenerate, start, err)
	return qs, err
}

// RegenerateQuestion calls the wrapped provider and records the call.
func (m *instrumented) RegenerateQuestion(ctx context.Context, req RegenerateRequest) (RegeneratedQuestion, error) {
	start := time.Now()
	q, err := m.next.RegenerateQuestion(ctx, req)
	m.record(req.Region, OperationRegenerate, start, err)
	return q, err
}

// Transcribe calls the wrapped provider and records the call.
func (m *instrumented) Transcribe(ctx context.Context, req TranscribeRequest) (Transcription, error) {
	start := time.Now()
	t, err := m.next.Transcribe(ctx, req)
	m.record(req.Region, OperationTranscribe, start, err)
	return t, err
}

func (m *instrumented) record(region, operation string, start time.Time, err error) {
	if region == "" {
		region = m.region
	}
	outcome := OutcomeOK
	switch {
	case err == nil:
	case Retryable(err):
		outcome = OutcomeRetryableError
	default:
		outcome = OutcomeInvalidRequest
	}
	m.duration.WithLabelValues(region, m.provider, operation).Observe(time.Since(start).Seconds())
	m.requests.WithLabelValues(region, m.provider, operation, outcome).Inc()
}
