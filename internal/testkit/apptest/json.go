package apptest

import "encoding/json"

// JSON is v encoded as JSON, for comparing and searching decoded values.
func JSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// Str reads a string field of a JSON object.
func Str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

// Num reads a number field of a JSON object.
func Num(m map[string]any, k string) float64 { f, _ := m[k].(float64); return f }

// Items reads a list field of a JSON object as objects.
func Items(m map[string]any, k string) []map[string]any {
	raw, _ := m[k].([]any)
	out := make([]map[string]any, len(raw))
	for i, r := range raw {
		out[i], _ = r.(map[string]any)
	}
	return out
}
