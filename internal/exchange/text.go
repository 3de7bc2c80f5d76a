package exchange

import (
	"fmt"
	"strconv"

	"github.com/assessd/assessd/internal/platform/textcheck"
)

// checkText holds every text of p to the rule the API holds request text
// to (textcheck): an imported document is a request too, and PostgreSQL
// cannot store a NUL in text or jsonb.
func (p Plan) checkText() error {
	texts := []placed[string]{
		{"the exam's name", p.Exam.Name}, {"the exam's description", p.Exam.Description}, {"the exam's language", p.Exam.Language},
	}
	var values []placed[map[string]any]
	for _, t := range p.Types {
		at := "question type " + strconv.Quote(textcheck.Sanitize(t.Ref, 64))
		texts = append(texts, placed[string]{at, t.Ref}, placed[string]{at + ": key", t.Key}, placed[string]{at + ": name", t.Name},
			placed[string]{at + ": description", t.Description}, placed[string]{at + ": condition", t.Condition},
			placed[string]{at + ": file inputs", t.FileInputs})
		values = append(values, placed[map[string]any]{at + ": config schema", t.ConfigSchema})
	}
	for i, q := range p.Questions {
		at := fmt.Sprintf("question %d", i+1)
		texts = append(texts, placed[string]{at + ": id", q.SourceID}, placed[string]{at + ": type", q.Type},
			placed[string]{at + ": prompt", q.Prompt})
		values = append(values, placed[map[string]any]{at + ": config", q.Config})
	}
	for _, t := range texts {
		if problem := textcheck.Problem(t.v); problem != "" {
			return malformed("%s %s", t.where, problem)
		}
	}
	for _, v := range values {
		if problem := jsonTextProblem(v.v); problem != "" {
			return malformed("%s: %s", v.where, problem)
		}
	}
	return nil
}

// placed is a value of the plan with the words that name its place.
type placed[T any] struct {
	where string
	v     T
}

// jsonTextProblem says what is wrong with the first key or string of a
// plain JSON value that breaks the text rule, or "" when none does.
func jsonTextProblem(v any) string {
	switch v := v.(type) {
	case string:
		if problem := textcheck.Problem(v); problem != "" {
			return "a text " + problem
		}
	case []any:
		for _, e := range v {
			if problem := jsonTextProblem(e); problem != "" {
				return problem
			}
		}
	case map[string]any:
		for k, e := range v {
			if problem := textcheck.Problem(k); problem != "" {
				return "a key " + problem
			}
			if problem := jsonTextProblem(e); problem != "" {
				return problem
			}
		}
	}
	return ""
}
