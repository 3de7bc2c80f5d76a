package assessment_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/store"
)

// chainSchema is a config schema whose $defs each apply the next one twice:
// 1.3 KB at depth 20, and validating against it took 2^depth steps. anchors
// names the definitions by $anchor instead of by JSON pointer.
func chainSchema(depth int, anchors bool) map[string]any {
	defs := map[string]any{}
	ref := func(i int) map[string]any {
		if anchors {
			return map[string]any{"$ref": fmt.Sprintf("#d%d", i)}
		}
		return map[string]any{"$ref": fmt.Sprintf("#/$defs/d%d", i)}
	}
	for i := range depth {
		defs[fmt.Sprintf("d%d", i)] = map[string]any{"$anchor": fmt.Sprintf("d%d", i), "allOf": []any{ref(i + 1), ref(i + 1)}}
	}
	defs[fmt.Sprintf("d%d", depth)] = map[string]any{"$anchor": fmt.Sprintf("d%d", depth), "type": "object", "required": []any{"word"}}
	return map[string]any{"$defs": defs, "allOf": []any{ref(0)}}
}

func wantInvalid(t *testing.T, err error, field, message string) {
	t.Helper()
	if e, ok := errs.As(err); !ok || e.Kind != errs.KindInvalid || e.Field != field || !strings.Contains(e.Message, message) {
		t.Fatalf("got %v, want a 400 naming %s and saying %q", err, field, message)
	}
}

// TestConfigSchemaReferencesBounded refuses, with a 400 naming
// configSchema, a type whose schema applies more than 10,000 subschemas
// once its references are followed, or refers to itself; a schema with
// references below the bound still validates configs through them.
func TestConfigSchemaReferencesBounded(t *testing.T) {
	f := newEmptyFixture(t)
	for _, c := range []struct {
		name    string
		schema  map[string]any
		message string
	}{
		{"a chain of 20 by pointer", chainSchema(20, false), "at most 10000 subschemas"},
		{"a chain of 20 by anchor", chainSchema(20, true), "at most 10000 subschemas"},
		{"recursion", map[string]any{"$ref": "#/$defs/node", "$defs": map[string]any{"node": map[string]any{
			"type": "object", "properties": map[string]any{"next": map[string]any{"$ref": "#/$defs/node"}}}}}, "must not refer to itself"},
		{"a dynamic reference", map[string]any{"$dynamicRef": "#/$defs/node", "$defs": map[string]any{"node": map[string]any{"type": "object"}}},
			"must not use $dynamicRef"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.content.CreateQuestionType(f.staff, assessment.NewTypeDef{Key: "refused_" + strings.ReplaceAll(c.name, " ", "_"), Name: "Refused",
				Condition: `=answer.value = config.word`, ConfigSchema: c.schema})
			wantInvalid(t, err, "configSchema", c.message)
		})
	}

	// Depth 8 applies 1,023 subschemas.
	typ, err := f.content.CreateQuestionType(f.staff, assessment.NewTypeDef{Key: "shallow", Name: "Shallow",
		Condition: `=answer.value = config.word`, ConfigSchema: chainSchema(8, true)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.content.CreateQuestion(f.staff, f.exam.ID, assessment.NewQuestion{Type: typ.ID, Prompt: "Say it.",
		Config: map[string]any{"word": "hello"}}); err != nil {
		t.Fatal(err)
	}
	_, err = f.content.CreateQuestion(f.staff, f.exam.ID, assessment.NewQuestion{Type: typ.ID, Prompt: "Say it.", Config: map[string]any{}})
	wantInvalid(t, err, "config", "missing property 'word'")

	_, err = f.content.UpdateQuestionType(f.staff, typ.ID, assessment.TypeDefPatch{ConfigSchema: chainSchema(20, false)})
	wantInvalid(t, err, "configSchema", "at most 10000 subschemas")
}

// wideSchema applies 9,898 subschemas to each item of config.v: 97
// references to a list of 100 bounds.
func wideSchema() map[string]any {
	bounds := make([]any, 100)
	for i := range bounds {
		bounds[i] = map[string]any{"minimum": float64(-i)}
	}
	refs := make([]any, 97)
	for i := range refs {
		refs[i] = map[string]any{"$ref": "#/$defs/bounds"}
	}
	return map[string]any{"type": "object", "properties": map[string]any{"v": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/all"}}},
		"$defs": map[string]any{"bounds": map[string]any{"allOf": bounds}, "all": map[string]any{"allOf": refs}}}
}

// TestValidationWorkBounded refuses, with a 400 naming config, a config
// whose values times its type's subschemas pass the bound, before
// validating it: 1,000 values against wideSchema took 19 s. A small
// schema still takes thousands of values.
func TestValidationWorkBounded(t *testing.T) {
	f := newEmptyFixture(t)
	create := func(schema map[string]any, values int) error {
		typ, err := f.content.CreateQuestionType(f.staff, assessment.NewTypeDef{Key: fmt.Sprintf("t%d_%d", len(schema), values), Name: "T",
			Condition: `=answer.value = 1`, ConfigSchema: schema})
		if err != nil {
			t.Fatal(err)
		}
		v := make([]any, values-2) // with the config and its list
		for i := range v {
			v[i] = 1.0
		}
		_, err = f.content.CreateQuestion(f.staff, f.exam.ID, assessment.NewQuestion{Type: typ.ID, Prompt: "Count.", Config: map[string]any{"v": v}})
		return err
	}
	start := time.Now()
	wantInvalid(t, create(wideSchema(), 1000), "config", "1000 values against 9898 subschemas")
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("refusing took %v", d)
	}
	if err := create(wideSchema(), 20); err != nil {
		t.Fatal(err)
	}
	small := map[string]any{"type": "object", "properties": map[string]any{"v": map[string]any{"type": "array", "items": map[string]any{"type": "number"}}}}
	if err := create(small, 5000); err != nil {
		t.Fatal(err)
	}
}

// TestStoredConfigSchemaBounded refuses with a 400 a question of a type
// whose schema was stored before its references were bounded, rather than
// validating its config in exponential time.
func TestStoredConfigSchemaBounded(t *testing.T) {
	f := newEmptyFixture(t)
	typ, err := f.content.CreateQuestionType(f.staff, assessment.NewTypeDef{Key: "deep", Name: "Deep",
		Condition: `=answer.value = config.word`})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Q(f.staff).Exec(f.staff, `UPDATE question_types SET config_schema = $2::jsonb WHERE id = $1`,
		typ.ID, store.JSON{V: chainSchema(20, false)}); err != nil {
		t.Fatal(err)
	}
	_, err = f.content.CreateQuestion(f.staff, f.exam.ID, assessment.NewQuestion{Type: typ.ID, Prompt: "Say it.",
		Config: map[string]any{"word": "hello"}})
	wantInvalid(t, err, "type", "question type deep cannot be used until its owner changes it: configSchema: must apply at most 10000 subschemas")
}
