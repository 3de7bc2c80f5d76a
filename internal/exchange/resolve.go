package exchange

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/assessd/assessd/internal/assessment"
)

// TypeAction says how the importing organization provides one of a Plan's
// custom types (decision 0072): Use names a type it already has, or Create
// asks for a new private type with Key, deprecated after the import when
// DeprecateAfter is set.
type TypeAction struct {
	Ref            string
	Use            string
	Create         bool
	Key            string
	DeprecateAfter bool
}

// ResolveTypes decides, for each custom type of p, whether the importing
// organization reuses a type it can use (available: its own and enabled
// types, as Service.QuestionTypes lists them) or creates one. A type is
// reused only when it has the same key and the same definition (config
// schema, scoring rule or AI grading) and is not deprecated; otherwise a
// private copy is created, under the same key or, when the organization
// owns a different type with that key, the first free key_2, key_3, ...
func ResolveTypes(p Plan, available []assessment.TypeDef) []TypeAction {
	owned := map[string]bool{}
	byKey := map[string][]assessment.TypeDef{}
	for _, t := range available {
		if t.Owned {
			owned[t.Key] = true
		}
		byKey[t.Key] = append(byKey[t.Key], t)
	}
	// next remembers, per key, the suffix after the last one taken: keys
	// only ever become owned, so the ones below it are still taken, and
	// renaming many types of one key stays linear.
	next := map[string]int{}
	out := make([]TypeAction, 0, len(p.Types))
	for _, spec := range p.Types {
		if id, ok := sameDefinition(spec, byKey[spec.Key]); ok {
			out = append(out, TypeAction{Ref: spec.Ref, Use: id})
			continue
		}
		key, i := spec.Key, max(next[spec.Key], 2)
		for ; owned[key]; i++ {
			key = fmt.Sprintf("%.*s_%d", 60, spec.Key, i)
		}
		owned[key], next[spec.Key] = true, i
		out = append(out, TypeAction{Ref: spec.Ref, Create: true, Key: key, DeprecateAfter: spec.Deprecated})
	}
	return out
}

// sameDefinition finds, among the types with spec's key, a usable one
// equal to spec in everything that decides how its questions are
// configured and scored.
func sameDefinition(spec TypeSpec, sameKey []assessment.TypeDef) (string, bool) {
	for _, t := range sameKey {
		if !t.Deprecated && t.Enabled && t.Condition == spec.Condition &&
			t.GradingEnabled == spec.GradingEnabled && t.FileInputs == spec.FileInputs &&
			sameJSON(t.ConfigSchema, spec.ConfigSchema) {
			return t.ID, true
		}
	}
	return "", false
}

// sameJSON compares two JSON values as JSON, whatever Go types built them.
func sameJSON(a, b any) bool {
	var x, y any
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil || json.Unmarshal(ja, &x) != nil || json.Unmarshal(jb, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
