package ai_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/ai"
)

var numericSchema = map[string]any{"type": "object", "required": []any{"correct"},
	"properties": map[string]any{"correct": map[string]any{"type": "number"}, "tolerance": map[string]any{"type": "number"}}}

func TestBuiltinRegenerateVariesNumbersAndOptions(t *testing.T) {
	p := ai.NewBuiltin()
	ctx := context.Background()
	numeric := ai.RegenerateRequest{QuestionType: "numeric", ConfigSchema: numericSchema, Prompt: "How much is 3 + 4?",
		Config: map[string]any{"correct": 7.0, "tolerance": 0.0}, Points: 2}
	got, err := p.RegenerateQuestion(ctx, numeric)
	if err != nil {
		t.Fatal(err)
	}
	var a, b int
	if n, _ := fmt.Sscanf(got.Prompt, "How much is %d + %d?", &a, &b); n != 2 || got.Prompt == numeric.Prompt {
		t.Fatalf("prompt %q: want changed operands", got.Prompt)
	}
	if got.Config["correct"] != float64(a+b) || got.Points != 2 || numeric.Config["correct"] != 7.0 {
		t.Fatalf("proposal %+v (request config %v)", got, numeric.Config)
	}
	if again, _ := p.RegenerateQuestion(ctx, numeric); !reflect.DeepEqual(again, got) {
		t.Fatalf("not deterministic: %+v then %+v", got, again)
	}
	harder := numeric
	harder.Instructions = "harder please"
	if h, _ := p.RegenerateQuestion(ctx, harder); !(h.Config["correct"].(float64) > got.Config["correct"].(float64)) {
		t.Fatalf("harder %+v is not harder than %+v", h, got)
	}

	choice := ai.RegenerateRequest{QuestionType: "multiple_choice", ConfigSchema: map[string]any{"type": "object"},
		Prompt: "Which planet is largest?", Points: 1, Config: map[string]any{"options": []any{
			map[string]any{"id": "a", "text": "Jupiter", "correct": true},
			map[string]any{"id": "b", "text": "Mars", "correct": false},
			map[string]any{"id": "c", "text": "Venus", "correct": false}}}}
	got, err = p.RegenerateQuestion(ctx, choice)
	if err != nil {
		t.Fatal(err)
	}
	options := got.Config["options"].([]any)
	if len(options) != 3 || options[0].(map[string]any)["id"] == "a" {
		t.Fatalf("options %v: want rotated", options)
	}
	for _, o := range options {
		m := o.(map[string]any)
		if (m["id"] == "a") != m["correct"].(bool) || (m["id"] == "a") != (m["text"] == "Jupiter") {
			t.Fatalf("option %v lost its correctness", m)
		}
	}
}

func TestRegenerateRejectsLongInstructions(t *testing.T) {
	req := ai.RegenerateRequest{Prompt: "p", ConfigSchema: numericSchema, Points: 1, Instructions: strings.Repeat("x", ai.MaxInstructionsLength+1)}
	if _, err := ai.NewBuiltin().RegenerateQuestion(context.Background(), req); !errors.Is(err, ai.ErrInvalidRequest) {
		t.Fatalf("got %v, want ErrInvalidRequest", err)
	}
}

// TestOpenAIRegenerateRequestBody checks the exact request: the response
// format is a JSON schema whose config is the question type's own schema.
func TestOpenAIRegenerateRequestBody(t *testing.T) {
	srv := newChatServer(t, http.StatusOK, completion(t, map[string]any{
		"prompt": "How much is 5 + 6?", "config": map[string]any{"correct": 11, "tolerance": 0}, "points": 2}))
	got, err := srv.provider().RegenerateQuestion(context.Background(), ai.RegenerateRequest{
		Region: "eu", QuestionType: "numeric", TypeName: "Numeric", ConfigSchema: numericSchema, Language: "en",
		Prompt: "How much is 3 + 4?", Config: map[string]any{"correct": 7, "tolerance": 0}, Points: 2, Instructions: "change the numbers",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := ai.RegeneratedQuestion{Prompt: "How much is 5 + 6?", Config: map[string]any{"correct": 11.0, "tolerance": 0.0}, Points: 2}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("proposal %+v, want %+v", got, want)
	}
	srv.assertJSON(t, `{
		"model": "gpt-test",
		"temperature": 0,
		"messages": [
			{"role": "system", "content": "You revise exam questions for teachers.\nWrite a new version of the given question: same question type, same learning goal, fresh wording, numbers and distractors, unless the teacher's instructions ask otherwise.\nThe question must stay self-contained and correct; its configuration must follow the given JSON Schema, and the correct answer in it must match the new prompt.\nReply with JSON only."},
			{"role": "user", "content": [{"type": "text", "text": "Question type: numeric (Numeric)\nLanguage: en\nCurrent prompt: How much is 3 + 4?\nCurrent config: {\"correct\":7,\"tolerance\":0}\nCurrent points: 2\nTeacher's instructions: change the numbers\n"}]}
		],
		"response_format": {"type": "json_schema", "json_schema": {"name": "question", "strict": false, "schema": {
			"type": "object",
			"properties": {
				"prompt": {"type": "string"},
				"config": {"type": "object", "required": ["correct"], "properties": {"correct": {"type": "number"}, "tolerance": {"type": "number"}}},
				"points": {"type": "number"}
			},
			"required": ["prompt", "config", "points"],
			"additionalProperties": false
		}}}
	}`)
}

func TestOpenAIRegenerateMalformedOutputIsRetryable(t *testing.T) {
	srv := newChatServer(t, http.StatusOK, completion(t, map[string]any{"prompt": "", "config": map[string]any{}, "points": 1}))
	_, err := srv.provider().RegenerateQuestion(context.Background(), ai.RegenerateRequest{Prompt: "p", ConfigSchema: numericSchema, Points: 1})
	if err == nil || !ai.Retryable(err) {
		t.Fatalf("got %v, want a retryable error", err)
	}
}
