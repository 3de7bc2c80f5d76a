package ai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// configShapes describes the configuration of each known question type to
// the model, in the shapes the builtin generator produces too.
var configShapes = map[string]string{
	TypeMultipleChoice: `{"options": [four answer strings], "correct": [index of each correct option, from 0]}`,
	TypeTrueFalse:      `{"correct": true or false}`,
	TypeShortText:      `{"accepted": [accepted answer strings]}`,
	TypeNumeric:        `{"answer": number, "tolerance": number}`,
	TypeEssay:          `{"rubric": "grading rubric", "keywords": [key terms], "minWords": number}`,
}

const generateSystemPrompt = `You write exam questions for teachers.
Write clear, self-contained questions at the requested level, in the requested language, using only the allowed question types.
Reply with JSON only. Each question's "config" is a JSON object encoded as a string, in the shape given for its type.`

// generateSchema is the strict response format of generated questions.
// Strict mode needs every object's properties spelled out, so the
// free-form configuration travels as a JSON-encoded string.
func generateSchema(types []string) jsonSchema {
	question := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"type":   map[string]any{"type": "string", "enum": types},
			"prompt": map[string]any{"type": "string"},
			"config": map[string]any{"type": "string", "description": "the question configuration, a JSON object encoded as a string"},
			"points": map[string]any{"type": "number"},
		},
		"required":             []string{"type", "prompt", "config", "points"},
		"additionalProperties": false,
	}
	return jsonSchema{
		Name:   "questions",
		Strict: true,
		Schema: map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"questions": map[string]any{"type": "array", "items": question}},
			"required":             []string{"questions"},
			"additionalProperties": false,
		},
	}
}

// GenerateQuestions asks the model for req.Count questions of the allowed
// types.
func (o *openAI) GenerateQuestions(ctx context.Context, req GenerateRequest) ([]GeneratedQuestion, error) {
	count, err := generateCount(req)
	if err != nil {
		return nil, err
	}
	types := req.QuestionTypes
	if len(types) == 0 {
		types = builtinTypes
	}
	var out struct {
		Questions []struct {
			Type   string          `json:"type"`
			Prompt string          `json:"prompt"`
			Config json.RawMessage `json:"config"`
			Points float64         `json:"points"`
		} `json:"questions"`
	}
	user := []contentPart{{Type: "text", Text: generatePromptText(req, types, count)}}
	if err := o.complete(ctx, generateSystemPrompt, user, generateSchema(types), &out); err != nil {
		return nil, err
	}
	if len(out.Questions) == 0 {
		return nil, errors.New("ai: openai: no questions generated")
	}
	out.Questions = out.Questions[:min(len(out.Questions), count)] // a model may write more than asked
	questions := make([]GeneratedQuestion, 0, len(out.Questions))
	for i, q := range out.Questions {
		config, err := decodeConfig(q.Config)
		if err != nil {
			return nil, fmt.Errorf("ai: openai: question %d: malformed config: %w", i, err)
		}
		questions = append(questions, GeneratedQuestion{Type: q.Type, Prompt: q.Prompt, Config: config, Points: q.Points})
	}
	return questions, nil
}

func generatePromptText(req GenerateRequest, types []string, count int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Write %d exam questions.\nSubject: %s\nStudent level: %s\nLanguage: %s\n", count, req.Subject, req.StudentLevel, req.Language)
	if req.DurationMinutes > 0 {
		fmt.Fprintf(&b, "The exam lasts %d minutes; size the questions accordingly.\n", req.DurationMinutes)
	}
	if req.Taxonomy != "" {
		fmt.Fprintf(&b, "Spread the questions over the levels of the %s taxonomy.\n", req.Taxonomy)
	}
	b.WriteString("Allowed question types and their config shapes:\n")
	for _, t := range types {
		shape, ok := configShapes[t]
		if !ok {
			shape = "a JSON object suited to the type"
		}
		fmt.Fprintf(&b, "- %s: %s\n", t, shape)
	}
	b.WriteString("Give 1 point to closed questions and 5 to essays unless the material calls for otherwise.")
	return b.String()
}

// decodeConfig accepts the configuration as a JSON-encoded string, as the
// strict schema asks, or as a plain object from providers that ignore
// strict mode.
func decodeConfig(raw json.RawMessage) (map[string]any, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(s)
	}
	var config map[string]any
	if err := json.Unmarshal(raw, &config); err != nil {
		return nil, err
	}
	if config == nil {
		return nil, errors.New("config is null")
	}
	return config, nil
}
