package ai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

const regenerateSystemPrompt = `You revise exam questions for teachers.
Write a new version of the given question: same question type, same learning goal, fresh wording, numbers and distractors, unless the teacher's instructions ask otherwise.
The question must stay self-contained and correct; its configuration must follow the given JSON Schema, and the correct answer in it must match the new prompt.
Reply with JSON only.`

// regenerateSchema is the response format of a regenerated question: the
// prompt, the points, and the config as the question type's own JSON
// Schema describes it. Strict mode is off because customer schemas need
// not meet its rules (every property required, no additionalProperties);
// the caller validates the config against the type's schema anyway.
func regenerateSchema(configSchema map[string]any) jsonSchema {
	return jsonSchema{
		Name:   "question",
		Strict: false,
		Schema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"prompt": map[string]any{"type": "string"},
				"config": configSchema,
				"points": map[string]any{"type": "number"},
			},
			"required":             []string{"prompt", "config", "points"},
			"additionalProperties": false,
		},
	}
}

// RegenerateQuestion asks the model for a new version of the question.
func (o *openAI) RegenerateQuestion(ctx context.Context, req RegenerateRequest) (RegeneratedQuestion, error) {
	if err := checkRegenerate(req); err != nil {
		return RegeneratedQuestion{}, err
	}
	var out struct {
		Prompt string          `json:"prompt"`
		Config json.RawMessage `json:"config"`
		Points float64         `json:"points"`
	}
	user := []contentPart{{Type: "text", Text: regeneratePromptText(req)}}
	if err := o.complete(ctx, regenerateSystemPrompt, user, regenerateSchema(req.ConfigSchema), &out); err != nil {
		return RegeneratedQuestion{}, err
	}
	if strings.TrimSpace(out.Prompt) == "" {
		return RegeneratedQuestion{}, errors.New("ai: openai: regenerated question has no prompt")
	}
	config, err := decodeConfig(out.Config)
	if err != nil {
		return RegeneratedQuestion{}, fmt.Errorf("ai: openai: regenerated question: malformed config: %w", err)
	}
	return RegeneratedQuestion{Prompt: out.Prompt, Config: config, Points: out.Points}, nil
}

func regeneratePromptText(req RegenerateRequest) string {
	config, _ := json.Marshal(req.Config)
	var b strings.Builder
	fmt.Fprintf(&b, "Question type: %s", req.QuestionType)
	if req.TypeName != "" {
		fmt.Fprintf(&b, " (%s)", req.TypeName)
	}
	b.WriteString("\n")
	if req.TypeDescription != "" {
		fmt.Fprintf(&b, "Type description: %s\n", req.TypeDescription)
	}
	fmt.Fprintf(&b, "Language: %s\nCurrent prompt: %s\nCurrent config: %s\nCurrent points: %g\n", req.Language, req.Prompt, config, req.Points)
	if req.Instructions != "" {
		fmt.Fprintf(&b, "Teacher's instructions: %s\n", req.Instructions)
	} else {
		b.WriteString("Keep the points unless the new version clearly calls for others.\n")
	}
	return b.String()
}
