package ai

import "context"

// Limit returns p with at most n calls in flight: a worker's calls to its
// region's provider stay bounded whether they run as activity tasks (which
// the worker's slots bound) or as local activities in a workflow task
// (first grading attempts, decision 0123, which they do not). A call that
// waits for its turn gives up when ctx ends.
func Limit(p Provider, n int) Provider {
	return &limited{next: p, slots: make(chan struct{}, n)}
}

type limited struct {
	next  Provider
	slots chan struct{}
}

// inTurn runs call once fewer than cap(l.slots) calls are in flight.
func inTurn[T any](ctx context.Context, l *limited, call func() (T, error)) (T, error) {
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
	defer func() { <-l.slots }()
	return call()
}

func (l *limited) Grade(ctx context.Context, req GradeRequest) (Grade, error) {
	return inTurn(ctx, l, func() (Grade, error) { return l.next.Grade(ctx, req) })
}

func (l *limited) GenerateQuestions(ctx context.Context, req GenerateRequest) ([]GeneratedQuestion, error) {
	return inTurn(ctx, l, func() ([]GeneratedQuestion, error) { return l.next.GenerateQuestions(ctx, req) })
}

func (l *limited) RegenerateQuestion(ctx context.Context, req RegenerateRequest) (RegeneratedQuestion, error) {
	return inTurn(ctx, l, func() (RegeneratedQuestion, error) { return l.next.RegenerateQuestion(ctx, req) })
}

func (l *limited) Transcribe(ctx context.Context, req TranscribeRequest) (Transcription, error) {
	return inTurn(ctx, l, func() (Transcription, error) { return l.next.Transcribe(ctx, req) })
}
