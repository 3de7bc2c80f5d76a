package ai_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/ai"
	"github.com/assessd/assessd/internal/assessment"
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

// A choice question without arithmetic keeps its options' texts: a moved
// number in a distractor could make it right ("which is prime?", 4 to 5).
func TestBuiltinRegenerateKeepsNumbersItCannotCheck(t *testing.T) {
	req := ai.RegenerateRequest{QuestionType: "multiple_choice", ConfigSchema: map[string]any{"type": "object"},
		Prompt: "Which number is prime?", Points: 1, Language: "en", Config: map[string]any{"options": []any{
			map[string]any{"id": "a", "text": "4", "correct": false},
			map[string]any{"id": "b", "text": "7", "correct": true},
			map[string]any{"id": "c", "text": "9", "correct": false},
			map[string]any{"id": "d", "text": "6", "correct": false}}}}
	for _, instructions := range []string{"", "harder", "for younger students"} {
		req.Instructions = instructions
		got, err := ai.NewBuiltin().RegenerateQuestion(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		texts := map[string]string{}
		for _, o := range got.Config["options"].([]any) {
			m := o.(map[string]any)
			texts[m["id"].(string)] = m["text"].(string)
		}
		if want := map[string]string{"a": "4", "b": "7", "c": "9", "d": "6"}; !reflect.DeepEqual(texts, want) {
			t.Errorf("instructions %q: option texts %v; want %v, only reordered", instructions, texts, want)
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

// regenerationSamples are a question of every built-in type and of a
// custom type with a text answer, valid for their types.
func regenerationSamples(t *testing.T) map[string]assessment.Question {
	t.Helper()
	options := func(correct ...string) []any {
		var out []any
		for _, id := range []string{"a", "b", "c"} {
			out = append(out, map[string]any{"id": id, "text": map[string]string{"a": "Jupiter", "b": "Mars", "c": "Venus"}[id],
				"correct": slices.Contains(correct, id)})
		}
		return out
	}
	samples := map[string]assessment.Question{
		assessment.TypeMultipleChoice: {Prompt: "Which planet is largest?", Config: map[string]any{"options": options("a")}},
		assessment.TypeMultipleSelect: {Prompt: "Which planets are closer to the Sun than Saturn?", Config: map[string]any{"options": options("a", "b", "c")}},
		assessment.TypeTrueFalse:      {Prompt: "The Sun is a star.", Config: map[string]any{"correct": true}},
		assessment.TypeShortText:      {Prompt: "What is the capital of France?", Config: map[string]any{"acceptedAnswers": []any{"Paris"}}},
		assessment.TypeNumeric:        {Prompt: "How much is 3 + 4?", Config: map[string]any{"correct": 7.0, "tolerance": 0.0}},
		assessment.TypeEssay:          {Prompt: "Explain photosynthesis.", Config: map[string]any{"rubric": "Light, water, sugar.", "minWords": 50.0}},
		assessment.TypeFileUpload:     {Prompt: "Upload a photo of your experiment.", Config: map[string]any{"maxFiles": 1.0}},
	}
	out := map[string]assessment.Question{}
	for _, key := range assessment.BuiltinKeys() {
		def, _ := assessment.Builtin(key)
		q, ok := samples[key]
		if !ok {
			t.Fatalf("no sample question of the built-in type %s", key)
		}
		q.Type, q.Def, q.Points = key, &def, 2
		out[key] = q
	}
	text := assessment.TypeDef{Key: "water_words", Name: "Model answer", ConfigSchema: map[string]any{"type": "object",
		"required": []any{"modelAnswer"}, "properties": map[string]any{"modelAnswer": map[string]any{"type": "string", "minLength": 1}}}}
	out[text.Key] = assessment.Question{Type: text.Key, Def: &text, Points: 3, Prompt: "Describe the water cycle.",
		Config: map[string]any{"modelAnswer": "Water evaporates, condenses into clouds and falls as rain."}}
	return out
}

func regenerateRequest(q assessment.Question, instructions, language string) ai.RegenerateRequest {
	return ai.RegenerateRequest{QuestionType: q.Type, TypeName: q.Def.Name, ConfigSchema: q.Def.ConfigSchema, Prompt: q.Prompt,
		Config: q.Config, Points: q.Points, Instructions: instructions, Language: language}
}

// TestBuiltinRegenerateNeverProposesTheSameQuestion regenerates a question
// of every type, with and without instructions and in every language the
// builtin provider rewords: each proposal differs from the question, is
// valid for its type, and a register the instructions ask for rewords the
// prompt even when the options changed already. Regenerating the proposal
// again changes it again without stacking lead-ins.
func TestBuiltinRegenerateNeverProposesTheSameQuestion(t *testing.T) {
	p := ai.NewBuiltin()
	for key, q := range regenerationSamples(t) {
		for _, language := range []string{"en", "de-CH", "fr"} {
			for _, instructions := range []string{"", "reword for a younger audience", "simpler", "make it harder", "more formal", "in Spanish", "informal"} {
				name := key + "/" + language + "/" + instructions
				req := regenerateRequest(q, instructions, language)
				got, err := p.RegenerateQuestion(context.Background(), req)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				proposal := assessment.Proposal{Prompt: got.Prompt, Config: got.Config, Points: got.Points}
				if proposal.Unchanged(q) || got.Points != q.Points {
					t.Fatalf("%s: proposal %+v is the question %+v", name, got, q)
				}
				if err := assessment.CheckProposal(q, proposal); err != nil {
					t.Fatalf("%s: proposal %+v is not valid: %v", name, got, err)
				}
				if instructions != "" && instructions != "in Spanish" && instructions != "informal" && got.Prompt == q.Prompt {
					t.Fatalf("%s: the prompt %q was not reworded", name, got.Prompt)
				}
				if key == assessment.TypeNumeric {
					continue // its prompt's numbers change too
				}
				leadIn, ok := strings.CutSuffix(got.Prompt, " "+q.Prompt)
				if got.Prompt != q.Prompt && !ok {
					t.Fatalf("%s: prompt %q does not end with the question's", name, got.Prompt)
				}
				again := req
				again.Prompt, again.Config = got.Prompt, got.Config
				next, err := p.RegenerateQuestion(context.Background(), again)
				if err != nil {
					t.Fatalf("%s, again: %v", name, err)
				}
				previous := q
				previous.Prompt, previous.Config = got.Prompt, got.Config
				if (assessment.Proposal{Prompt: next.Prompt, Config: next.Config, Points: next.Points}).Unchanged(previous) {
					t.Fatalf("%s, again: %+v is the question again", name, next)
				}
				nextLeadIn, ok := strings.CutSuffix(next.Prompt, " "+q.Prompt)
				if next.Prompt != got.Prompt && (!ok || leadIn != "" && strings.Contains(nextLeadIn, leadIn)) {
					t.Fatalf("%s, again: prompt %q stacks lead-ins onto %q", name, next.Prompt, got.Prompt)
				}
			}
		}
	}
}

// TestBuiltinRegenerateRefusesWhatItCannotVary asks for questions with no
// sum or options in a language the builtin provider has no rewordings
// for: it refuses, for good, saying why, rather than propose the question
// unchanged. A sum still varies in that language.
func TestBuiltinRegenerateRefusesWhatItCannotVary(t *testing.T) {
	p := ai.NewBuiltin()
	samples := regenerationSamples(t)
	for _, key := range []string{"water_words", assessment.TypeTrueFalse, assessment.TypeEssay} {
		for _, instructions := range []string{"", "reword for a younger audience"} {
			_, err := p.RegenerateQuestion(context.Background(), regenerateRequest(samples[key], instructions, "es"))
			if !errors.Is(err, ai.ErrCannotRephrase) || !errors.Is(err, ai.ErrInvalidRequest) || ai.Retryable(err) {
				t.Fatalf("%s %q in Spanish: %v, want ErrCannotRephrase for good", key, instructions, err)
			}
		}
	}
	got, err := p.RegenerateQuestion(context.Background(), regenerateRequest(samples[assessment.TypeNumeric], "", "es"))
	if err != nil || got.Prompt == samples[assessment.TypeNumeric].Prompt {
		t.Fatalf("a sum in Spanish: %+v, %v", got, err)
	}
}
