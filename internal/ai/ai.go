// Package ai grades answers, generates exam questions and regenerates one
// question with an AI provider. Two providers implement Provider: an OpenAI-compatible
// chat-completions client (NewOpenAI) and a deterministic builtin grader
// that needs no network (NewBuiltin), so the whole pipeline runs offline.
// Instrument adds metrics to either.
//
// The package never sees organizations or storage: callers pick the
// provider of the organization's region and pass everything it needs in the
// request.
package ai

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// File is an attachment fetched from the media CDN.
type File struct {
	URL         string
	ContentType string // e.g. image/png, application/pdf
	Data        []byte
}

// GradeRequest asks for the grade of one answer.
type GradeRequest struct {
	Region       string         // "eu" or "global": the organization's data region (metrics label)
	QuestionType string         // the question type key, e.g. "essay"
	Prompt       string         // the question text
	Config       map[string]any // the question configuration (may hold "rubric" string, "keywords" []any of strings, "minWords" number, "requiredFiles" number, "modelAnswer" string)
	Answer       any            // the submitted answer value (JSON value)
	MaxScore     float64        // the question's points
	Files        []File         // attachments, already fetched, attached after the prompt text
}

// Grade is a provider's verdict.
type Grade struct {
	Score     float64 // 0..MaxScore
	MaxScore  float64
	Feedback  string // shown to the student
	Rationale string // for teachers
}

// GenerateRequest asks for exam questions.
type GenerateRequest struct {
	Region          string
	Subject         string
	StudentLevel    string
	DurationMinutes int
	Taxonomy        string   // e.g. "bloom"
	QuestionTypes   []string // question type keys allowed, e.g. "multiple_choice", "true_false", "short_text", "numeric", "essay"
	Language        string   // BCP 47
	Count           int
}

// GeneratedQuestion is one generated question.
type GeneratedQuestion struct {
	Type   string
	Prompt string
	Config map[string]any
	Points float64
}

// Provider grades answers, generates questions and regenerates one.
type Provider interface {
	Grade(ctx context.Context, req GradeRequest) (Grade, error)
	GenerateQuestions(ctx context.Context, req GenerateRequest) ([]GeneratedQuestion, error)
	RegenerateQuestion(ctx context.Context, req RegenerateRequest) (RegeneratedQuestion, error)
	// Transcribe reads a handwritten answer box of a scanned sheet.
	Transcribe(ctx context.Context, req TranscribeRequest) (Transcription, error)
}

// Question type keys the builtin generator knows and the generation prompt
// describes.
const (
	TypeMultipleChoice = "multiple_choice"
	TypeTrueFalse      = "true_false"
	TypeShortText      = "short_text"
	TypeNumeric        = "numeric"
	TypeEssay          = "essay"
)

// Generation bounds: Count 0 means DefaultQuestionCount; more than
// MaxQuestionCount is an invalid request.
const (
	DefaultQuestionCount = 5
	MaxQuestionCount     = 50
)

// ErrInvalidRequest marks errors that retrying cannot fix: the provider
// answered 4xx other than 408/429, or the request itself is invalid. It is
// wrapped; callers test with errors.Is.
var ErrInvalidRequest = errors.New("ai: invalid request")

// Retryable reports whether err is transient (network error, timeout, 408,
// 429, 5xx, malformed provider output). Every error except an invalid
// request counts as transient: a cancelled context, for instance, is a
// worker stopping, and the work must run again elsewhere rather than fail
// for good.
func Retryable(err error) bool {
	return err != nil && !errors.Is(err, ErrInvalidRequest)
}

// generateCount validates a GenerateRequest and returns its question
// count, DefaultQuestionCount when unset.
func generateCount(req GenerateRequest) (int, error) {
	switch {
	case strings.TrimSpace(req.Subject) == "":
		return 0, invalidf("subject is required")
	case req.Count == 0:
		return DefaultQuestionCount, nil
	case req.Count < 0 || req.Count > MaxQuestionCount:
		return 0, invalidf("question count %d is outside 1..%d", req.Count, MaxQuestionCount)
	}
	return req.Count, nil
}

// validMaxScore rejects a negative or NaN MaxScore, which no grade could
// respect.
func validMaxScore(maxScore float64) error {
	if !(maxScore >= 0) {
		return invalidf("max score %v is negative", maxScore)
	}
	return nil
}

// invalidf returns an error wrapping ErrInvalidRequest.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidRequest}, args...)...)
}
