package ai

import "strings"

// RegenerateRequest asks for a new version of one question, of the same
// type: the type's definition and configuration schema, the current
// content, and the teacher's optional instructions.
type RegenerateRequest struct {
	Region string
	// QuestionType is the type key; TypeName and TypeDescription describe
	// it to the model.
	QuestionType    string
	TypeName        string
	TypeDescription string
	// ConfigSchema is the type's configuration JSON Schema: the new config
	// must be valid against it.
	ConfigSchema map[string]any
	Prompt       string
	Config       map[string]any
	Points       float64
	// Instructions are the teacher's wishes ("harder", "change the
	// numbers", "in Spanish"); may be empty.
	Instructions string
	// Language is the exam's BCP 47 language.
	Language string
}

// RegeneratedQuestion is a proposed new version of a question.
type RegeneratedQuestion struct {
	Prompt string
	Config map[string]any
	Points float64
}

// MaxInstructionsLength bounds RegenerateRequest.Instructions, in
// characters.
const MaxInstructionsLength = 500

// checkRegenerate rejects requests no provider can serve.
func checkRegenerate(req RegenerateRequest) error {
	switch {
	case strings.TrimSpace(req.Prompt) == "":
		return invalidf("the question has no prompt")
	case len([]rune(req.Instructions)) > MaxInstructionsLength:
		return invalidf("instructions are longer than %d characters", MaxInstructionsLength)
	case req.ConfigSchema == nil:
		return invalidf("the question type has no config schema")
	}
	return validMaxScore(req.Points)
}
