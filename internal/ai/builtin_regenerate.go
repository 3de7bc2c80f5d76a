package ai

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"regexp"
	"strconv"
	"strings"
)

// arithmetic finds the first "a + b" style expression of a prompt.
var arithmetic = regexp.MustCompile(`(\d+)(\s*)([+\-*×x])(\s*)(\d+)`)

// integer finds whole numbers in a text.
var integer = regexp.MustCompile(`\d+`)

// RegenerateQuestion varies a question deterministically, offline: the
// operands of an arithmetic expression in the prompt change (more when the
// instructions say "harder", less for "easier") and a numeric "correct"
// answer and the choice options follow; choice options are rotated, their
// correctness travelling with them, and numeric distractors move with the
// answer. The type and points stay. Equal requests get equal proposals.
func (builtin) RegenerateQuestion(_ context.Context, req RegenerateRequest) (RegeneratedQuestion, error) {
	if err := checkRegenerate(req); err != nil {
		return RegeneratedQuestion{}, err
	}
	config := copyConfig(req.Config)
	h := fnv.New32a()
	h.Write([]byte(req.Prompt + "\x00" + req.Instructions))
	seed := int(h.Sum32() % 1000)
	step := 1 + seed%5
	instr := strings.ToLower(req.Instructions)
	vary := func(n int) int {
		switch {
		case strings.Contains(instr, "harder"):
			return n*3 + step
		case strings.Contains(instr, "easier"):
			return max(1, n/2) + step%2
		}
		return n + step
	}
	prompt, delta := req.Prompt, 0
	if m := arithmetic.FindStringSubmatchIndex(prompt); m != nil {
		a, _ := strconv.Atoi(prompt[m[2]:m[3]])
		b, _ := strconv.Atoi(prompt[m[10]:m[11]])
		op := prompt[m[6]:m[7]]
		na, nb := vary(a), vary(b)
		if op == "-" && nb > na {
			na, nb = nb, na
		}
		before, after := apply(a, op, b), apply(na, op, nb)
		delta = after - before
		prompt = prompt[:m[2]] + strconv.Itoa(na) + prompt[m[3]:m[10]] + strconv.Itoa(nb) + prompt[m[11]:]
		if c, ok := number(config["correct"]); ok && c == float64(before) {
			config["correct"] = float64(after)
		}
	}
	if options, ok := config["options"].([]any); ok && len(options) > 1 {
		config["options"] = varyOptions(options, 1+seed%(len(options)-1), delta, step)
	}
	return RegeneratedQuestion{Prompt: prompt, Config: config, Points: req.Points}, nil
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
// correct; otherwise numbers in distractors move by step, unless that
// would repeat another option's text.
func varyOptions(options []any, turn, delta, step int) []any {
	out := make([]any, len(options))
	texts := map[string]bool{}
	for _, o := range options {
		if m, ok := o.(map[string]any); ok {
			t, _ := m["text"].(string)
			texts[t] = true
		}
	}
	for i, o := range options {
		m, ok := o.(map[string]any)
		if !ok {
			out[(i+turn)%len(options)] = o
			continue
		}
		m = copyConfig(m)
		text, _ := m["text"].(string)
		correct, _ := m["correct"].(bool)
		shift := step
		switch {
		case delta != 0:
			shift = delta
		case correct:
			shift = 0
		}
		if shift != 0 {
			moved := integer.ReplaceAllStringFunc(text, func(s string) string {
				n, _ := strconv.Atoi(s)
				return strconv.Itoa(max(0, n+shift))
			})
			if delta != 0 || !texts[moved] {
				m["text"] = moved
			}
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
