package embedflow

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// optionsSchema is a configuration with a rows field whose rows nest
// another rows field, as a question type's schema may.
var optionsSchema = map[string]any{"type": "object", "properties": map[string]any{
	"options": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{
		"id": map[string]any{"type": "string"}, "text": map[string]any{"type": "string"}, "correct": map[string]any{"type": "boolean"},
		"hints": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{
			"text": map[string]any{"type": "string"}}}},
	}}},
}}

func TestParseConfigFormRows(t *testing.T) {
	t.Parallel()
	form := url.Values{
		"config.options.0.id": {"b"}, "config.options.0.text": {"Lyon"},
		// An emptied row is dropped; rows without an id get the first
		// free one, around the ids taken.
		"config.options.1.text": {""}, "config.options.1.correct": {""},
		"config.options.2.text": {"Paris"}, "config.options.2.correct": {"on"},
		"config.options.3.id": {"o1"}, "config.options.3.text": {"Nice"},
		"config.options.4.text":         {"Metz"},
		"config.options.4.hints.0.text": {"east"}, "config.options.4.hints.1.text": {"north"},
		// Numbers as the page never writes them name no row, and the rows
		// end at the first missing number.
		"config.options.05.text": {"leading zero"}, "config.options.-6.text": {"signed"}, "config.options.+6.text": {"plus"},
		"config.options.7.text": {"after the gap"}, "config.options.8": {"no field"},
	}
	got := parseConfigForm(optionsSchema, form, "config")
	want := map[string]any{"options": []any{
		map[string]any{"id": "b", "text": "Lyon"},
		map[string]any{"id": "o2", "text": "Paris", "correct": true},
		map[string]any{"id": "o1", "text": "Nice"},
		map[string]any{"id": "o3", "text": "Metz", "hints": []any{map[string]any{"text": "east"}, map[string]any{"text": "north"}}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parsed\n%v\nwant\n%v", got, want)
	}
}

// TestParseConfigFormManyRows reads a form of 20,000 rows, each with a
// nested row, all without ids: the reader indexes the row numbers once and
// hands out ids from a set. Before, it searched every field for each row,
// and every id taken for each free one; 4,000 rows took 23 s.
func TestParseConfigFormManyRows(t *testing.T) {
	t.Parallel()
	const rows = 20_000
	form := url.Values{}
	for i := range rows {
		form.Set(fmt.Sprintf("config.options.%d.text", i), fmt.Sprint("option ", i))
		form.Set(fmt.Sprintf("config.options.%d.hints.0.text", i), "hint")
	}
	list, _ := parseConfigForm(optionsSchema, form, "config")["options"].([]any)
	if len(list) != rows {
		t.Fatalf("%d rows read, want %d", len(list), rows)
	}
	for _, i := range []int{0, 1, rows - 1} {
		if item := list[i].(map[string]any); item["id"] != fmt.Sprint("o", i+1) || item["text"] != fmt.Sprint("option ", i) {
			t.Fatalf("row %d: %v", i, item)
		}
	}
}

// TestConfigFormRoundTrip posts a configuration's form as a browser does
// and reads it back: every input, a nested row's included, is named where
// the reader looks.
func TestConfigFormRoundTrip(t *testing.T) {
	t.Parallel()
	config := map[string]any{"options": []any{
		map[string]any{"id": "a", "text": "Lyon", "correct": true, "hints": []any{map[string]any{"text": "south"}, map[string]any{"text": "Rhône"}}},
		map[string]any{"id": "b", "text": "Metz"},
	}}
	fields, ok := configForm(optionsSchema, config, "", "")
	if !ok {
		t.Fatal("no form for two levels of rows")
	}
	form := url.Values{}
	var post func([]configField)
	post = func(fields []configField) {
		for _, f := range fields {
			switch {
			case f.Kind == "rows":
				for _, row := range f.Rows {
					post(row)
				}
			case f.Kind != "bool" || f.Checked:
				form.Set(f.Name, f.Value)
			}
		}
	}
	post(fields)
	if got := parseConfigForm(optionsSchema, form, "config"); !reflect.DeepEqual(got, config) {
		t.Fatalf("posted %v\nread\n%v\nwant\n%v", form, got, config)
	}
}

// nestedSchema is an object of width string properties and, but at the
// last of levels, a rows field whose items are the next level.
func nestedSchema(levels, width int) map[string]any {
	props := map[string]any{}
	for i := range width {
		props[fmt.Sprintf("p%03d", i)] = map[string]any{"type": "string", "maxLength": 100}
	}
	if levels > 1 {
		props["rows"] = map[string]any{"type": "array", "items": nestedSchema(levels-1, width)}
	}
	return map[string]any{"type": "object", "properties": props}
}

// TestConfigFormBounds: past two levels of rows or 500 fields, whether the
// schema or the configuration makes them, a configuration is edited as
// JSON. Before, every level tripled the form, and a schema within the
// API's limits took 5 to 10 s to build.
func TestConfigFormBounds(t *testing.T) {
	t.Parallel()
	options := func(n int) map[string]any {
		list := make([]any, n)
		for i := range list {
			list[i] = map[string]any{"id": fmt.Sprint("o", i), "text": "option"}
		}
		return map[string]any{"options": list}
	}
	for _, tt := range []struct {
		name           string
		schema, config map[string]any
		structured     bool
	}{
		{"two levels of rows", nestedSchema(3, 1), nil, true},
		{"three levels of rows", nestedSchema(4, 1), nil, false},
		{"500 fields", nestedSchema(1, 500), nil, true},
		{"501 fields", nestedSchema(1, 501), nil, false},
		{"100 fields and two blank rows of them", nestedSchema(2, 100), nil, true},
		{"200 fields and two blank rows of them", nestedSchema(2, 200), nil, false},
		{"20 options", optionsSchema, options(20), true},
		{"200 options", optionsSchema, options(200), false},
	} {
		if _, ok := configForm(tt.schema, tt.config, "", ""); ok != tt.structured {
			t.Errorf("%s: structured %v, want %v", tt.name, ok, tt.structured)
		}
	}
}

// TestHostileFormsCostBoundedWork builds the form of a schema within the
// API's limits (53,917 bytes, JSON depth 30) and reads a 1 MiB form of ten
// names like config.options.0.0.0…, counting allocations rather than time.
// Before, the form took 15.9 million allocations (5 to 10 s) to build, and
// the names 100,000 (2 to 5 s): the reader indexed the path before every
// number.
// Not parallel: testing.AllocsPerRun counts the whole process's.
func TestHostileFormsCostBoundedWork(t *testing.T) {
	deep := nestedSchema(10, 130)
	if _, ok := configForm(deep, nil, "", ""); ok {
		t.Fatal("a form for ten levels of rows")
	}
	if n := testing.AllocsPerRun(1, func() { configForm(deep, nil, "", "") }); n > 10*maxFormFields {
		t.Errorf("deciding on the deep schema: %.0f allocations", n)
	}
	form := url.Values{}
	for i := range 10 {
		form.Set(fmt.Sprint("config.options", strings.Repeat(".0", 49_990), ".", i), "x")
	}
	if n := testing.AllocsPerRun(1, func() { parseConfigForm(optionsSchema, form, "config") }); n > 100 {
		t.Errorf("reading ten names of 100,000 bytes: %.0f allocations", n)
	}
}
