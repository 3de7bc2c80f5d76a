package assessment

import (
	"encoding/json"
	"fmt"
	"slices"
)

// The built-in question type keys.
const (
	TypeMultipleChoice = "multiple_choice" // one correct option
	TypeMultipleSelect = "multiple_select" // every correct option, nothing else
	TypeTrueFalse      = "true_false"
	TypeShortText      = "short_text"
	TypeNumeric        = "numeric"
	TypeEssay          = "essay"       // AI graded
	TypeFileUpload     = "file_upload" // AI graded with the uploaded files
)

// optionsSchema is shared by both choice types: ids are what answers name.
const optionsSchema = `{
  "type": "array", "minItems": 2, "maxItems": 20,
  "items": {
    "type": "object", "additionalProperties": false, "required": ["id", "text"],
    "properties": {
      "id": {"type": "string", "minLength": 1, "maxLength": 40},
      "text": {"type": "string", "minLength": 1, "maxLength": 1000},
      "correct": {"type": "boolean"},
      "feedback": {"type": "string", "maxLength": 1000}
    }
  }
}`

// builtinSources are the built-in definitions in the same shape as an
// organization's own: a config schema and either a JSONata condition or AI
// grading. Built-ins are scored by the same evaluator as custom types.
var builtinSources = []struct {
	key, name, description, schema, condition, fileInputs string
}{
	{TypeMultipleChoice, "Multiple choice", "One correct option; the answer value is the chosen option's id.",
		`{"type": "object", "additionalProperties": false, "required": ["options"],
		  "properties": {"options": ` + optionsSchema + `, "shuffle": {"type": "boolean"}}}`,
		`=$type(answer.value) = "string" and answer.value in config.options[correct = true].id`, ""},
	{TypeMultipleSelect, "Multiple select", "Several correct options; the answer value is the array of chosen option ids and must name exactly the correct ones.",
		`{"type": "object", "additionalProperties": false, "required": ["options"],
		  "properties": {"options": ` + optionsSchema + `, "shuffle": {"type": "boolean"}}}`,
		`=$type(answer.value) = "array" and $join($sort(answer.value), "\u0000") = $join($sort(config.options[correct = true].id), "\u0000")`, ""},
	{TypeTrueFalse, "True or false", "The answer value is a boolean.",
		`{"type": "object", "additionalProperties": false, "required": ["correct"],
		  "properties": {"correct": {"type": "boolean"}}}`,
		`=answer.value = config.correct`, ""},
	{TypeShortText, "Short text", "The answer value is a string compared with the accepted answers, ignoring surrounding space and, unless caseSensitive, case.",
		`{"type": "object", "additionalProperties": false, "required": ["acceptedAnswers"],
		  "properties": {
		    "acceptedAnswers": {"type": "array", "minItems": 1, "maxItems": 50, "items": {"type": "string", "minLength": 1, "maxLength": 500}},
		    "caseSensitive": {"type": "boolean"}}}`,
		`=$type(answer.value) = "string" and (config.caseSensitive = true ? $trim(answer.value) in config.acceptedAnswers.$trim($) : $lowercase($trim(answer.value)) in config.acceptedAnswers.$lowercase($trim($)))`, ""},
	{TypeNumeric, "Numeric", "The answer value is a number, correct within the tolerance (absolute, default 0).",
		`{"type": "object", "additionalProperties": false, "required": ["correct"],
		  "properties": {"correct": {"type": "number"}, "tolerance": {"type": "number", "minimum": 0}, "unit": {"type": "string", "maxLength": 40}}}`,
		`=$type(answer.value) = "number" and $abs(answer.value - config.correct) <= (config.tolerance ? config.tolerance : 0) + 1e-9`, ""},
	{TypeEssay, "Essay", "A free-text answer graded by AI against the rubric.",
		`{"type": "object", "additionalProperties": false,
		  "properties": {"rubric": {"type": "string", "maxLength": 10000}, "minWords": {"type": "integer", "minimum": 0}, "maxWords": {"type": "integer", "minimum": 1}}}`,
		"", ""},
	{TypeFileUpload, "File upload", "Files (URLs on the media CDN) graded by AI against the rubric; the files are attached to the grading prompt.",
		`{"type": "object", "additionalProperties": false,
		  "properties": {"instructions": {"type": "string", "maxLength": 10000}, "rubric": {"type": "string", "maxLength": 10000},
		    "maxFiles": {"type": "integer", "minimum": 1, "maximum": 10},
		    "acceptedTypes": {"type": "array", "maxItems": 20, "items": {"type": "string", "maxLength": 100}}}}`,
		"", "=answer.files"},
}

// builtins holds the parsed built-in definitions by key.
var builtins = func() map[string]TypeDef {
	out := map[string]TypeDef{}
	for _, b := range builtinSources {
		var schema map[string]any
		if err := json.Unmarshal([]byte(b.schema), &schema); err != nil {
			// Like regexp.MustCompile on a literal: a typo in the
			// constants above fails every test at package load.
			panic(fmt.Sprintf("built-in type %s: %v", b.key, err)) //nolint:forbidigo // see above
		}
		out[b.key] = TypeDef{
			Key: b.key, Name: b.name, Description: b.description, ConfigSchema: schema,
			Condition: b.condition, GradingEnabled: b.condition == "", FileInputs: b.fileInputs,
			Public: true, BuiltIn: true, Enabled: true,
		}
	}
	return out
}()

// BuiltinKeys returns the built-in type keys in documentation order.
func BuiltinKeys() []string {
	keys := make([]string, len(builtinSources))
	for i, b := range builtinSources {
		keys[i] = b.key
	}
	return keys
}

// Builtin returns the built-in type with the key.
func Builtin(key string) (TypeDef, bool) {
	t, ok := builtins[key]
	return t, ok
}

func isBuiltin(key string) bool { return slices.Contains(BuiltinKeys(), key) }
