package embedflow

import (
	"fmt"
	"net/url"
	"reflect"
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
