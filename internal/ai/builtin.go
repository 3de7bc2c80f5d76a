package ai

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// HeuristicWords is the answer length the builtin grader expects when a
// question configures no keywords, minimum length or required files.
const HeuristicWords = 50

type builtin struct{}

// NewBuiltin returns the deterministic provider: it grades from the
// question configuration's keywords, minWords and requiredFiles, generates
// template questions, and never touches the network. Equal requests get
// equal answers.
func NewBuiltin() Provider { return builtin{} }

var _ Provider = builtin{}

// check is one graded criterion: ratio in [0, 1], a sentence for the
// student when the criterion is not met, and a note for the teacher.
type check struct {
	ratio    float64
	feedback string
	note     string
}

// Grade scores the answer as the mean of the configured criteria.
func (builtin) Grade(_ context.Context, req GradeRequest) (Grade, error) {
	if err := validMaxScore(req.MaxScore); err != nil {
		return Grade{}, err
	}
	words := wordsOf(answerText(req.Answer))
	var checks []check
	if kws := stringList(req.Config["keywords"]); len(kws) > 0 {
		checks = append(checks, keywordCheck(kws, words))
	}
	if minWords, ok := number(req.Config["minWords"]); ok && minWords > 0 {
		checks = append(checks, lengthCheck(len(words), minWords))
	}
	if want, ok := number(req.Config["requiredFiles"]); ok && want > 0 {
		checks = append(checks, filesCheck(len(req.Files), want))
	}
	if len(checks) == 0 {
		checks = append(checks, lengthCheck(len(words), HeuristicWords))
	}

	var sum float64
	var feedback, notes []string
	for _, c := range checks {
		sum += c.ratio
		if c.feedback != "" {
			feedback = append(feedback, c.feedback)
		}
		notes = append(notes, c.note)
	}
	mean := sum / float64(len(checks))
	score := math.Round(req.MaxScore*mean*100) / 100
	if len(feedback) == 0 {
		feedback = append(feedback, "Well done: the answer meets every criterion.")
	}
	return Grade{
		Score:     score,
		MaxScore:  req.MaxScore,
		Feedback:  strings.Join(feedback, " "),
		Rationale: fmt.Sprintf("Builtin grader: %s; score %.2f × %s = %.2f.", strings.Join(notes, "; "), mean, fmtNumber(req.MaxScore), score),
	}, nil
}

func keywordCheck(keywords, words []string) check {
	// Padding with spaces makes a keyword match whole words only, so
	// "cat" does not count inside "category", and phrases still match.
	text := " " + strings.Join(words, " ") + " "
	var missing []string
	for _, kw := range keywords {
		if !strings.Contains(text, " "+strings.Join(wordsOf(kw), " ")+" ") {
			missing = append(missing, kw)
		}
	}
	found := len(keywords) - len(missing)
	c := check{
		ratio: float64(found) / float64(len(keywords)),
		note:  fmt.Sprintf("keywords %d/%d", found, len(keywords)),
	}
	if len(missing) > 0 {
		c.feedback = "Missing key terms: " + strings.Join(missing, ", ") + "."
	}
	return c
}

func lengthCheck(words int, minWords float64) check {
	c := check{
		ratio: math.Min(float64(words)/minWords, 1),
		note:  fmt.Sprintf("length %d/%s words", words, fmtNumber(minWords)),
	}
	if c.ratio < 1 {
		c.feedback = fmt.Sprintf("The answer has %d words; at least %s are expected.", words, fmtNumber(minWords))
	}
	return c
}

func filesCheck(files int, want float64) check {
	c := check{
		ratio: math.Min(float64(files)/want, 1),
		note:  fmt.Sprintf("files %d/%s", files, fmtNumber(want)),
	}
	if c.ratio < 1 {
		c.feedback = fmt.Sprintf("%d of %s required files attached; %s missing.", files, fmtNumber(want), fmtNumber(want-float64(files)))
	}
	return c
}

// answerText collects the prose of a JSON answer value: strings and
// numbers, object members in key order so the result is deterministic.
// URLs are left out; they reference files, which are graded separately.
func answerText(v any) string {
	var parts []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			if !isURL(v) {
				parts = append(parts, v)
			}
		case float64, int, int64, json.Number:
			parts = append(parts, fmt.Sprint(v))
		case []any:
			for _, e := range v {
				walk(e)
			}
		case []string:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(v[k])
			}
		}
	}
	walk(v)
	return strings.Join(parts, " ")
}

func isURL(s string) bool {
	l := strings.ToLower(s)
	return (strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://")) && !strings.ContainsFunc(s, unicode.IsSpace)
}

// wordsOf splits text into lower-case words of letters and digits.
func wordsOf(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	})
}

// stringList reads a configuration list of strings, as decoded from JSON
// ([]any) or built in Go ([]string), skipping blank entries.
func stringList(v any) []string {
	var out []string
	add := func(s string) {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	switch v := v.(type) {
	case []string:
		for _, s := range v {
			add(s)
		}
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok {
				add(s)
			}
		}
	}
	return out
}

// number reads a configuration number, as decoded from JSON or built in Go.
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}

func fmtNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
