// Package quality analyses how well a question is written (spec 2.5): the
// deterministic checks the editor shows, from the prompt, the type's
// configuration and, once results exist, item statistics. It is pure: no
// database, no clock, the same input gives the same report.
package quality

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode"
)

// Severities of a finding, least to most serious.
const (
	Info    = "info"
	Warning = "warning"
	Error   = "error"
)

// Input is what the analysis reads.
type Input struct {
	// Type is the built-in type key; other types get only the prompt and
	// statistics checks.
	Type   string
	Prompt string
	Config map[string]any
	Stats  *Stats
}

// Stats are a question's item statistics over graded results.
type Stats struct {
	Responses      int
	Difficulty     float64
	Discrimination *float64
}

// Finding is one observation.
type Finding struct {
	Code     string
	Severity string
	Message  string
	Field    string
}

// Report is the analysis of one question.
type Report struct {
	// Score is 100 minus 25 per error, 10 per warning and 3 per info, at
	// least 0.
	Score            int
	ReadabilityGrade float64
	Findings         []Finding
}

// Thresholds of the checks.
const (
	maxGrade          = 12   // Flesch-Kincaid grade above which a prompt is hard to read
	maxStemWords      = 60   // words above which a stem is overlong
	minStemWords      = 3    // words below which a stem is ambiguous
	nearDuplicate     = 0.85 // similarity above which two options are near-duplicates
	lengthOutlier     = 1.6  // correct option longer than this times the mean distractor
	minResponses      = 5    // responses before item statistics are judged
	minDiscrimination = 0.2
	easyDifficulty    = 0.95
	hardDifficulty    = 0.2
	penaltyError      = 25
	penaltyWarning    = 10
	penaltyInfo       = 3
)

// Analyze runs every check on in.
func Analyze(in Input) Report {
	a := &analysis{}
	grade := Grade(in.Prompt)
	a.stem(in, grade)
	switch in.Type {
	case "multiple_choice", "multiple_select":
		a.options(in)
	case "short_text":
		a.shortText(in.Config)
	case "numeric":
		a.numeric(in.Config)
	}
	a.statistics(in.Stats)
	score := 100
	for _, f := range a.findings {
		score -= map[string]int{Error: penaltyError, Warning: penaltyWarning, Info: penaltyInfo}[f.Severity]
	}
	return Report{Score: max(score, 0), ReadabilityGrade: math.Round(grade*10) / 10, Findings: a.findings}
}

type analysis struct{ findings []Finding }

func (a *analysis) add(code, severity, field, format string, args ...any) {
	a.findings = append(a.findings, Finding{Code: code, Severity: severity, Field: field, Message: fmt.Sprintf(format, args...)})
}

var (
	negatives = regexp.MustCompile(`(?i)\b(not|never|except|least|incorrect|none)\b`)
	vague     = regexp.MustCompile(`(?i)\b(usually|often|sometimes|generally|frequently|rarely|probably|possibly|might|may|some)\b`)
)

func (a *analysis) stem(in Input, grade float64) {
	n := len(words(in.Prompt))
	switch {
	case n < minStemWords:
		a.add("STEM_TOO_SHORT", Warning, "prompt", "the prompt has %d word(s); a stem this short is likely ambiguous", n)
	case n > maxStemWords:
		a.add("STEM_TOO_LONG", Warning, "prompt", "the prompt has %d words; keep stems under %d words and move context elsewhere", n, maxStemWords)
	}
	// A grade of fewer words than a stem needs says nothing: one long
	// word ("Photosynthesis?") alone reads at grade 20.
	if grade > maxGrade && n >= minStemWords {
		a.add("READABILITY_HIGH", Warning, "prompt", "the prompt reads at grade %.1f (Flesch-Kincaid); simplify words and sentences", grade)
	}
	if m := negatives.FindString(in.Prompt); m != "" && in.Type != "true_false" {
		a.add("NEGATIVE_STEM", Warning, "prompt", "the prompt is phrased negatively (%q); students misread negative stems", m)
	}
	if m := vague.FindString(in.Prompt); m != "" {
		a.add("AMBIGUOUS_STEM", Info, "prompt", "the prompt uses the vague qualifier %q, which makes the expected answer debatable", m)
	}
}

type option struct {
	id, text string
	correct  bool
}

func optionsOf(config map[string]any) []option {
	raw, _ := config["options"].([]any)
	out := make([]option, 0, len(raw))
	for _, r := range raw {
		m, _ := r.(map[string]any)
		id, _ := m["id"].(string)
		text, _ := m["text"].(string)
		correct, _ := m["correct"].(bool)
		out = append(out, option{id, text, correct})
	}
	return out
}

var aboveOptions = regexp.MustCompile(`(?i)\b(all|none|both|neither) of the (above|previous|options)\b`)

func (a *analysis) options(in Input) {
	opts := optionsOf(in.Config)
	var correct []int
	ids := map[string]int{}
	for i, o := range opts {
		field := fmt.Sprintf("config.options.%d", i)
		if o.correct {
			correct = append(correct, i)
		}
		if j, dup := ids[o.id]; dup {
			a.add("DUPLICATE_OPTION_ID", Error, field+".id", "options %d and %d share the id %q, so the answer key is ambiguous", j, i, o.id)
		}
		ids[o.id] = i
		if m := aboveOptions.FindString(o.text); m != "" {
			a.add("ALL_NONE_OF_THE_ABOVE", Warning, field+".text", "option %d is %q; such options reward test-taking strategy over knowledge", i, m)
		}
		for j := range i {
			switch sim := similarity(opts[j].text, o.text); {
			case sim == 1:
				a.add("DUPLICATE_OPTIONS", Error, field+".text", "options %d and %d are the same", j, i)
			case sim >= nearDuplicate:
				a.add("NEAR_DUPLICATE_OPTIONS", Warning, field+".text", "options %d and %d are nearly the same (%.0f%% similar)", j, i, sim*100)
			}
		}
	}
	switch {
	case len(correct) == 0:
		a.add("NO_CORRECT_OPTION", Error, "config.options", "no option is marked correct")
	case len(correct) > 1 && in.Type == "multiple_choice":
		a.add("MULTIPLE_CORRECT_OPTIONS", Error, "config.options", "%d options are marked correct, but the type expects exactly one; use multiple_select", len(correct))
	case len(correct) == len(opts) && len(opts) > 0:
		a.add("ALL_OPTIONS_CORRECT", Warning, "config.options", "every option is marked correct, so the question does not test anything")
	}
	a.distractorLengths(opts, correct)
}

// distractorLengths flags a correct option that stands out by its length:
// test-wise students pick the longest, most qualified option.
func (a *analysis) distractorLengths(opts []option, correct []int) {
	if len(correct) != 1 || len(opts) < 3 {
		return
	}
	var sum float64
	for i, o := range opts {
		if i != correct[0] {
			sum += float64(len([]rune(o.text)))
		}
	}
	mean := sum / float64(len(opts)-1)
	if l := float64(len([]rune(opts[correct[0]].text))); mean > 0 && l > lengthOutlier*mean && l-mean >= 10 {
		a.add("IMPLAUSIBLE_DISTRACTORS", Warning, fmt.Sprintf("config.options.%d.text", correct[0]),
			"the correct option is %.1f times as long as the average distractor; make the distractors as plausible and specific", l/mean)
	}
}

func (a *analysis) shortText(config map[string]any) {
	raw, _ := config["acceptedAnswers"].([]any)
	caseSensitive, _ := config["caseSensitive"].(bool)
	seen := map[string]int{}
	for i, r := range raw {
		s, _ := r.(string)
		key := strings.TrimSpace(s)
		if !caseSensitive {
			key = strings.ToLower(key)
		}
		if j, dup := seen[key]; dup {
			a.add("DUPLICATE_ACCEPTED_ANSWER", Warning, fmt.Sprintf("config.acceptedAnswers.%d", i), "accepted answers %d and %d are the same as compared", j, i)
		}
		seen[key] = i
	}
}

func (a *analysis) numeric(config map[string]any) {
	correct, _ := config["correct"].(float64)
	tolerance, _ := config["tolerance"].(float64)
	if correct != 0 && tolerance >= math.Abs(correct) {
		a.add("TOLERANCE_TOO_WIDE", Warning, "config.tolerance", "the tolerance (%g) is at least the correct value (%g), so 0 is accepted too", tolerance, correct)
	}
}

func (a *analysis) statistics(s *Stats) {
	if s == nil || s.Responses < minResponses {
		return
	}
	switch {
	case s.Difficulty >= easyDifficulty:
		a.add("ITEM_TOO_EASY", Info, "", "%.0f%% of the points were earned over %d responses; the item hardly separates students", s.Difficulty*100, s.Responses)
	case s.Difficulty <= hardDifficulty:
		a.add("ITEM_TOO_HARD", Warning, "", "only %.0f%% of the points were earned over %d responses; check the key and the wording", s.Difficulty*100, s.Responses)
	}
	switch d := s.Discrimination; {
	case d == nil:
		a.add("NO_DISCRIMINATION", Warning, "", "the item does not discriminate: every student scored the same on it or on the rest of the exam")
	case *d < 0:
		a.add("NEGATIVE_DISCRIMINATION", Error, "", "students who did worse on the rest of the exam did better on this item (r = %.2f); check the answer key", *d)
	case *d < minDiscrimination:
		a.add("LOW_DISCRIMINATION", Warning, "", "the item discriminates weakly between stronger and weaker students (r = %.2f, below %.1f)", *d, minDiscrimination)
	}
}

// words splits text into words of letters and digits.
func words(text string) []string {
	return strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' })
}

// Grade is the Flesch-Kincaid grade level of text (English syllable rules;
// a rough guide for other languages).
func Grade(text string) float64 {
	ws := words(text)
	if len(ws) == 0 {
		return 0
	}
	sentences := max(strings.Count(text, ".")+strings.Count(text, "?")+strings.Count(text, "!"), 1)
	syllables := 0
	for _, w := range ws {
		syllables += countSyllables(w)
	}
	g := 0.39*float64(len(ws))/float64(sentences) + 11.8*float64(syllables)/float64(len(ws)) - 15.59
	return max(g, 0)
}

func countSyllables(word string) int {
	w := strings.ToLower(word)
	n, prevVowel := 0, false
	for _, r := range w {
		v := strings.ContainsRune("aeiouy", r)
		if v && !prevVowel {
			n++
		}
		prevVowel = v
	}
	if strings.HasSuffix(w, "e") && !strings.HasSuffix(w, "le") && n > 1 {
		n--
	}
	return max(n, 1)
}

// similarity is 1 minus the normalized edit distance of the normalized
// texts: 1 for the same text, near 0 for unrelated ones. Only
// near-duplicates need the exact figure; below nearDuplicate it is some
// lower value.
func similarity(a, b string) float64 {
	x, y := []rune(normalize(a)), []rune(normalize(b))
	n := max(len(x), len(y))
	if n == 0 {
		return 1
	}
	// One past the largest distance that is still near, so that float
	// rounding at the boundary cannot matter.
	limit := int((1-nearDuplicate)*float64(n)) + 1
	return 1 - float64(levenshtein(x, y, limit))/float64(n)
}

func normalize(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(strings.TrimRightFunc(s, unicode.IsPunct))), " ")
}

// levenshtein is the edit distance of a and b, or limit+1 when it is
// greater. An edit path through row i and column j costs at least |j-i| +
// |diff-(j-i)|, so only paths within the band of columns where that is at
// most limit are followed, and a row whose cells all exceed limit ends the
// search: O(len(a)·limit) time instead of O(len(a)·len(b)).
func levenshtein(a, b []rune, limit int) int {
	over, diff := limit+1, len(b)-len(a)
	if diff > limit || -diff > limit {
		return over
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		lo, hi := max(1, i-(limit-diff)/2), min(len(b), i+(limit+diff)/2)
		// The cells beside the band stand for any distance above limit.
		cur[lo-1] = over
		if lo == 1 {
			cur[0] = i
		}
		if hi < len(b) {
			cur[hi+1] = over
		}
		least := cur[lo-1]
		for j := lo; j <= hi; j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			least = min(least, cur[j])
		}
		if least > limit {
			return over
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], over)
}
