package exchange

import (
	"fmt"
	"slices"

	"github.com/assessd/assessd/internal/assessment"
)

// Plan is what an import would create, in no particular storage: the
// exam, its questions in order, the custom question types they need, and
// a warning for every item that could not be represented. Nothing is
// dropped without a warning.
type Plan struct {
	Exam      ExamSpec
	Types     []TypeSpec
	Questions []QuestionSpec
	Warnings  []Warning
}

// ExamSpec describes the exam to create.
type ExamSpec struct {
	Name            string
	Description     string
	Language        string
	DurationMinutes int
}

// TypeSpec is a custom question type the imported questions name. Ref is
// the type's handle inside the imported content (its id in the exporting
// organization); questions refer to it by Ref. ResolveTypes decides
// whether the importing organization maps it to a type it has or creates
// it.
type TypeSpec struct {
	Ref            string
	Key            string
	Name           string
	Description    string
	ConfigSchema   map[string]any
	Condition      string
	GradingEnabled bool
	FileInputs     string
	Public         bool
	Deprecated     bool
}

// QuestionSpec is a question to create. Type is a built-in type key or the
// Ref of one of the Plan's Types. SourceID is the question's identifier in
// the imported content, for warnings and audit.
type QuestionSpec struct {
	SourceID string
	Type     string
	Prompt   string
	Config   map[string]any
	Points   float64
	Revision int
}

// Warning reports an item that could not be imported as it is: Item names
// it as the imported content does (an item identifier, a file, a question
// id), Message says what happened to it.
type Warning struct {
	Item    string `json:"item"`
	Message string `json:"message"`
}

// isBuiltin reports whether key names a built-in question type.
func isBuiltin(key string) bool { return slices.Contains(assessment.BuiltinKeys(), key) }

// typeRefs is the set of the Plan's type Refs, for looking up each
// question's type in constant time.
func (p *Plan) typeRefs() map[string]bool {
	refs := make(map[string]bool, len(p.Types))
	for _, t := range p.Types {
		refs[t.Ref] = true
	}
	return refs
}

func (p *Plan) warn(item, format string, args ...any) {
	p.Warnings = append(p.Warnings, Warning{Item: item, Message: fmt.Sprintf(format, args...)})
}
