package quality

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// exactDistance is the edit distance as it was computed before decision
// 0164: every cell, quadratic in the texts' length.
func exactDistance(a, b []rune) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// exactSimilarity is similarity as it was before decision 0164.
func exactSimilarity(a, b string) float64 {
	x, y := []rune(normalize(a)), []rune(normalize(b))
	if len(x) == 0 && len(y) == 0 {
		return 1
	}
	return 1 - float64(exactDistance(x, y))/float64(max(len(x), len(y)))
}

// textPairs are random texts and copies of them edited a little or a lot,
// mostly short, some up to 1,000 characters, over alphabets small enough to
// make near-duplicates.
func textPairs(seed uint64, n int) [][2][]rune {
	r := rand.New(rand.NewPCG(seed, 164))
	alphabets := [][]rune{[]rune("ab"), []rune("abc "), []rune("aB,. é世"), []rune("abcdefghijklmnopqrstuvwxyz ")}
	pairs := make([][2][]rune, n)
	for p := range pairs {
		letters := alphabets[r.IntN(len(alphabets))]
		a := make([]rune, r.IntN(60))
		if r.IntN(50) == 0 {
			a = make([]rune, 100+r.IntN(900))
		}
		for i := range a {
			a[i] = letters[r.IntN(len(letters))]
		}
		// Edits around 15% of the length straddle the near-duplicate bound.
		b := slices.Clone(a)
		for range r.IntN(len(a)/4 + 3) {
			i := r.IntN(len(b) + 1)
			switch op := r.IntN(3); {
			case op == 0 || i == len(b):
				b = slices.Insert(b, i, letters[r.IntN(len(letters))])
			case op == 1:
				b = slices.Delete(b, i, i+1)
			default:
				b[i] = letters[r.IntN(len(letters))]
			}
		}
		pairs[p] = [2][]rune{a, b}
	}
	return pairs
}

// TestLevenshteinWithinLimit holds the bounded distance to the exact one,
// capped at limit+1, for limits below, at and above it.
func TestLevenshteinWithinLimit(t *testing.T) {
	r := rand.New(rand.NewPCG(164, 2))
	for _, p := range textPairs(1, 5000) {
		a, b := p[0], p[1]
		want := exactDistance(a, b)
		for _, limit := range []int{0, want - 1, want, want + 1, r.IntN(max(len(a), len(b)) + 2)} {
			if limit < 0 {
				continue
			}
			if got := levenshtein(a, b, limit); got != min(want, limit+1) {
				t.Fatalf("levenshtein(%q, %q, %d) = %d, want %d", string(a), string(b), limit, got, min(want, limit+1))
			}
		}
	}
}

// TestSimilarityMatchesExact holds the bounded similarity to the exact one
// wherever a finding depends on it: the same figure from nearDuplicate up,
// below nearDuplicate on both sides otherwise.
func TestSimilarityMatchesExact(t *testing.T) {
	pairs := [][2]string{
		{"", ""}, {"", "a"}, {"?!", ""}, {"Paris.", "paris"}, {"  a   b ", "A B!"},
		{strings.Repeat("a", 20), strings.Repeat("a", 17) + "bbb"}, // exactly 85% similar
		{strings.Repeat("a", 20), strings.Repeat("a", 16) + "bbbb"},
		{strings.Repeat("a", 1000), strings.Repeat("b", 1000)},
		{strings.Repeat("ab", 500), strings.Repeat("ba", 500)},
	}
	for _, p := range textPairs(2, 20000) {
		pairs = append(pairs, [2]string{string(p[0]), string(p[1])})
	}
	for _, p := range pairs {
		got, want := similarity(p[0], p[1]), exactSimilarity(p[0], p[1])
		if want >= nearDuplicate && got != want || want < nearDuplicate && got >= nearDuplicate {
			t.Fatalf("similarity(%q, %q) = %v, want %v", p[0], p[1], got, want)
		}
	}
}

// TestReadabilityOfShortStems: a stem too short to be graded gets the
// short-stem finding alone, not a readability grade of one long word.
func TestReadabilityOfShortStems(t *testing.T) {
	t.Parallel()
	codes := func(prompt string) []string {
		var out []string
		for _, f := range Analyze(Input{Prompt: prompt}).Findings {
			out = append(out, f.Code)
		}
		return out
	}
	if got := codes("Photosynthesis?"); !slices.Equal(got, []string{"STEM_TOO_SHORT"}) {
		t.Errorf("one long word: %v", got)
	}
	if got := codes("Characterize photosynthetic electrochemistry's thermodynamic irreversibility."); !slices.Contains(got, "READABILITY_HIGH") {
		t.Errorf("five long words: %v", got)
	}
}
