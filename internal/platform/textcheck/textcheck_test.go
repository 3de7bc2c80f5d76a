package textcheck_test

import (
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/assessd/assessd/internal/platform/textcheck"
)

func TestProblem(t *testing.T) {
	for _, tc := range []struct {
		in     string
		wantOK bool
	}{
		{"", true},
		{"Fractions quiz", true},
		{"Ünïcödé 😀 \u202e", true},
		{"tab\tand\nnewline", true},
		{"a\x00b", false},
		{"\xff", false},
		{"\xed\xa0\x80", false}, // an encoded surrogate
		{strings.Repeat("x", textcheck.MaxBytes), true},
		{strings.Repeat("x", textcheck.MaxBytes+1), false},
	} {
		if got := textcheck.Problem(tc.in); (got == "") != tc.wantOK {
			t.Errorf("Problem(%.20q) = %q, want ok=%v", tc.in, got, tc.wantOK)
		}
	}
}

func TestFormProblem(t *testing.T) {
	for _, tc := range []struct {
		form                url.Values
		wantField, wantText string
	}{
		{url.Values{"a": {"x"}, "b": {"y", ""}}, "", ""},
		{url.Values{"b": {"ok", "n\x00"}, "c": {"\xff"}}, "b", "NUL"},
		{url.Values{"z": {"\xff"}, "a\x00": {"x"}}, "", "NUL"},
		{url.Values{"q\x01": {"\x00"}}, "q\uFFFD", "NUL"},
	} {
		field, problem := textcheck.FormProblem(tc.form)
		if field != tc.wantField || (tc.wantText == "") != (problem == "") || !strings.Contains(problem, tc.wantText) {
			t.Errorf("FormProblem(%q) = %q, %q; want %q and a problem naming %q", tc.form, field, problem, tc.wantField, tc.wantText)
		}
	}
}

func TestSanitize(t *testing.T) {
	if got := textcheck.Sanitize("ab\x00c\xffd", 10); got != "ab\uFFFDc\uFFFDd" {
		t.Errorf("Sanitize = %q", got)
	}
	if got := textcheck.Sanitize("abcdef", 3); got != "abc…" {
		t.Errorf("Sanitize = %q", got)
	}
}

// FuzzProblem checks that text Problem accepts is storable in PostgreSQL
// text (valid UTF-8, no NUL) and bounded, and that Sanitize always yields
// printable, valid UTF-8.
func FuzzProblem(f *testing.F) {
	for _, s := range []string{"", "name", "a\x00b", "\xff\xfe", "\xed\xa0\x80", "😀", "\u202e", "\r\n\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if textcheck.Problem(s) == "" {
			if !utf8.ValidString(s) || strings.ContainsRune(s, 0) || len(s) > textcheck.MaxBytes {
				t.Fatalf("Problem accepted %q", s)
			}
		} else if utf8.ValidString(s) && !strings.ContainsRune(s, 0) && len(s) <= textcheck.MaxBytes {
			t.Fatalf("Problem refused %q", s)
		}
		out := textcheck.Sanitize(s, 50)
		if !utf8.ValidString(out) || utf8.RuneCountInString(out) > 51 {
			t.Fatalf("Sanitize(%q) = %q", s, out)
		}
		for _, r := range out {
			if unicode.IsControl(r) {
				t.Fatalf("Sanitize(%q) kept control character %U", s, r)
			}
		}
	})
}
