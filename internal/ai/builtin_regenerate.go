package ai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
	"strings"
)

// arithmetic finds the first "a + b" style expression of a prompt.
var arithmetic = regexp.MustCompile(`(\d+)(\s*)([+\-*×x])(\s*)(\d+)`)

// integer finds whole numbers in a text.
var integer = regexp.MustCompile(`\d+`)

// ErrCannotRephrase is why the builtin provider proposes nothing for a
// question it cannot vary; its message is safe to show to clients. The
// error RegenerateQuestion returns wraps ErrInvalidRequest too: asking
// again would change nothing.
var ErrCannotRephrase = errors.New("the built-in AI provider cannot rephrase this question: " +
	"it has no sum or choice options to vary and no rewordings in the exam's language")

// RegenerateQuestion varies a question deterministically, offline: the
// operands of an arithmetic expression in the prompt change (more when the
// instructions say "harder", less for "easier") and a numeric "correct"
// answer and the choice options follow; choice options are rotated, their
// correctness travelling with them, and numeric distractors move with the
// answer. Instructions that ask for a register ("simpler", "younger",
// "harder", "formal") reword the prompt with a lead-in of the exam's
// language, and so does a plain lead-in when nothing else changed. A
// question none of this changes is ErrCannotRephrase rather than a
// proposal equal to it. The type and points stay. Equal requests get equal
// proposals.
func (builtin) RegenerateQuestion(_ context.Context, req RegenerateRequest) (RegeneratedQuestion, error) {
	if err := checkRegenerate(req); err != nil {
		return RegeneratedQuestion{}, err
	}
	config := copyConfig(req.Config)
	h := fnv.New32a()
	h.Write([]byte(req.Prompt + "\x00" + req.Instructions))
	seed := int(h.Sum32() % 1000)
	step := 1 + seed%5
	prompt, delta := varyArithmetic(req.Prompt, strings.ToLower(req.Instructions), step, config)
	if options, ok := config["options"].([]any); ok && len(options) > 1 {
		config["options"] = varyOptions(options, 1+seed%(len(options)-1), delta)
	}
	book, hasBook := phrasebookOf(req.Language)
	if r := registerOf(req.Instructions); hasBook && r != registerPlain {
		prompt = book.reword(prompt, r, seed)
	}
	if hasBook && unchanged(req, prompt, config) {
		prompt = book.reword(prompt, registerPlain, seed)
	}
	if unchanged(req, prompt, config) {
		return RegeneratedQuestion{}, fmt.Errorf("%w: %w", ErrInvalidRequest, ErrCannotRephrase)
	}
	return RegeneratedQuestion{Prompt: prompt, Config: config, Points: req.Points}, nil
}

// varyArithmetic changes the operands of the prompt's first arithmetic
// expression, by step or as instr (lower case) asks, and a numeric
// "correct" answer of config with them. It returns the new prompt and how
// much the expression's value moved.
func varyArithmetic(prompt, instr string, step int, config map[string]any) (string, int) {
	m := arithmetic.FindStringSubmatchIndex(prompt)
	if m == nil {
		return prompt, 0
	}
	vary := func(n int) int {
		switch {
		case strings.Contains(instr, "harder"):
			return n*3 + step
		case strings.Contains(instr, "easier"):
			return max(1, n/2) + step%2
		}
		return n + step
	}
	a, _ := strconv.Atoi(prompt[m[2]:m[3]])
	b, _ := strconv.Atoi(prompt[m[10]:m[11]])
	op := prompt[m[6]:m[7]]
	na, nb := vary(a), vary(b)
	if op == "-" && nb > na {
		na, nb = nb, na
	}
	before, after := apply(a, op, b), apply(na, op, nb)
	if c, ok := number(config["correct"]); ok && c == float64(before) {
		config["correct"] = float64(after)
	}
	return prompt[:m[2]] + strconv.Itoa(na) + prompt[m[3]:m[10]] + strconv.Itoa(nb) + prompt[m[11]:], after - before
}

// unchanged reports whether prompt and config are the request's own, as
// JSON compares them (7 and 7.0 alike).
func unchanged(req RegenerateRequest, prompt string, config map[string]any) bool {
	a, _ := json.Marshal(config)
	b, _ := json.Marshal(req.Config)
	return prompt == req.Prompt && string(a) == string(b)
}

// register is the tone a rewording gives a prompt.
type register int

const (
	registerPlain register = iota
	registerSimpler
	registerYounger
	registerHarder
	registerFormal
	registers // how many there are
)

// registerWords are the word beginnings of instructions that ask for a
// register, in precedence order ("simpler for kids" is for the young).
// Whole words are matched from their start, so "informal" is not formal.
var registerWords = []struct {
	r     register
	words []string
}{
	{registerYounger, []string{"young", "child", "kid", "pupil"}},
	{registerSimpler, []string{"simpl", "easi", "easy", "plain"}},
	{registerHarder, []string{"harder", "challeng", "advanced", "difficult", "tough"}},
	{registerFormal, []string{"formal"}},
}

// registerOf reads the register the instructions ask for, registerPlain
// when they name none.
func registerOf(instructions string) register {
	words := wordsOf(instructions)
	for _, rw := range registerWords {
		for _, w := range words {
			for _, prefix := range rw.words {
				if strings.HasPrefix(w, prefix) {
					return rw.r
				}
			}
		}
	}
	return registerPlain
}

// reword puts a lead-in of register r before the prompt, replacing one a
// previous regeneration put there, so regenerating again alternates
// lead-ins rather than stacking them; the new one always differs from the
// one it replaces.
func (p phrasebook) reword(prompt string, r register, seed int) string {
	current, body := "", prompt
	for _, leadIns := range p.leadIns {
		for _, l := range leadIns {
			if rest, ok := strings.CutPrefix(prompt, l+" "); ok && strings.TrimSpace(rest) != "" {
				current, body = l, rest
			}
		}
	}
	choices := p.leadIns[r]
	next := choices[seed%len(choices)]
	if next == current {
		next = choices[(seed+1)%len(choices)]
	}
	return next + " " + body
}

func apply(a int, op string, b int) int {
	switch op {
	case "+":
		return a + b
	case "-":
		return a - b
	}
	return a * b
}

// varyOptions rotates options by turn. When the prompt's numbers moved by
// delta, numeric option texts move with them, so the correct one stays
// correct. Otherwise their numbers stay: without knowing what the question
// asks, a distractor's moved number could be right ("which is prime?",
// 4 becoming 5), so only the order changes.
func varyOptions(options []any, turn, delta int) []any {
	out := make([]any, len(options))
	for i, o := range options {
		m, ok := o.(map[string]any)
		if !ok {
			out[(i+turn)%len(options)] = o
			continue
		}
		m = copyConfig(m)
		if text, _ := m["text"].(string); delta != 0 {
			m["text"] = integer.ReplaceAllStringFunc(text, func(s string) string {
				n, _ := strconv.Atoi(s)
				return strconv.Itoa(max(0, n+delta))
			})
		}
		out[(i+turn)%len(options)] = m
	}
	return out
}

// copyConfig deep-copies a JSON object, so a proposal never aliases the
// request.
func copyConfig(c map[string]any) map[string]any {
	b, err := json.Marshal(c)
	if err != nil {
		return map[string]any{}
	}
	out := map[string]any{}
	if err := json.Unmarshal(b, &out); err != nil || out == nil {
		return map[string]any{}
	}
	return out
}
