// Package textcheck holds the one rule every string from a request must
// pass before it reaches the domain: valid UTF-8, no NUL characters (which
// PostgreSQL cannot store in text or jsonb) and a length bound. Field-level
// rules (a name's 200 characters, a prompt's 10,000) stay in the domain;
// this is the floor beneath them.
package textcheck

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxBytes bounds any single string of a request. Bodies are at most 1 MiB;
// no field of the API needs more than a tenth of that.
const MaxBytes = 100_000

// Problem says what is wrong with s as request text, phrased to follow a
// field name ("must not contain NUL characters"), or "" when s is fine.
func Problem(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "must be valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "must not contain NUL characters"
	case len(s) > MaxBytes:
		return fmt.Sprintf("must be at most %d bytes", MaxBytes)
	}
	return ""
}

// FormProblem applies the rule to a posted form, names and values, in
// name order. It returns the first field that breaks it, made safe to echo
// ("" when the name itself breaks it), and what is wrong with it; problem
// is "" when the whole form keeps the rule.
func FormProblem(form url.Values) (field, problem string) {
	for _, name := range slices.Sorted(maps.Keys(form)) {
		if problem := Problem(name); problem != "" {
			return "", problem
		}
		for _, v := range form[name] {
			if problem := Problem(v); problem != "" {
				return Sanitize(name, 64), problem
			}
		}
	}
	return "", ""
}

// Sanitize makes s safe to echo in an error message: invalid UTF-8 and
// control characters become U+FFFD and the result keeps at most max runes
// (an ellipsis marks the cut).
func Sanitize(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if n == max {
			b.WriteString("…")
			break
		}
		if unicode.IsControl(r) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
