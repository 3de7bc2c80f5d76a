package answersheet_test

import (
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/answersheet"
	"github.com/assessd/assessd/internal/platform/ids"
)

func TestSheetIDRoundTrip(t *testing.T) {
	for _, id := range []answersheet.SheetID{
		{ExamID: ids.New(ids.Exam), UserID: ids.New(ids.User), Page: 1, LayoutHash: "0A1B2C3D"},
		{ExamID: ids.New(ids.Exam), Page: 42, LayoutHash: "FFFFFFFF"}, // a sheet with a name box
	} {
		s := id.String()
		if len(s) > 84 || strings.ToUpper(s) != s {
			t.Errorf("%q: want at most 84 upper-case characters for the QR code's alphanumeric mode", s)
		}
		got, err := answersheet.ParseSheetID(s)
		if err != nil || got != id {
			t.Errorf("ParseSheetID(%q) = %+v, %v; want %+v", s, got, err, id)
		}
	}
}

func TestParseSheetIDRejects(t *testing.T) {
	good := answersheet.SheetID{ExamID: ids.New(ids.Exam), UserID: ids.New(ids.User), Page: 3, LayoutHash: "0A1B2C3D"}.String()
	// withSum recomputes the checksum, so the field check itself is tested.
	withSum := func(body string) string { return body + ":" + fmt.Sprintf("%08X", crc32.ChecksumIEEE([]byte(body))) }
	fields := strings.Split(good, ":")
	join := func(f ...string) string { return withSum(strings.Join(f, ":")) }
	for name, payload := range map[string]string{
		"empty":                "",
		"a URL":                "https://example.com/",
		"one digit mistyped":   strings.Replace(good, fields[3], swapFirst(fields[3]), 1),
		"truncated":            good[:len(good)-1],
		"other version":        strings.Replace(good, "ASSESSD:1:", "ASSESSD:2:", 1),
		"lower case":           strings.ToLower(good),
		"malformed exam":       join("ASSESSD", "1", "NOTAULID", fields[3], "1", "0A1B2C3D"),
		"malformed user":       join("ASSESSD", "1", fields[2], "X", "1", "0A1B2C3D"),
		"page zero":            join("ASSESSD", "1", fields[2], fields[3], "0", "0A1B2C3D"),
		"page with a zero pad": join("ASSESSD", "1", fields[2], fields[3], "01", "0A1B2C3D"),
		"page too high":        join("ASSESSD", "1", fields[2], fields[3], "100", "0A1B2C3D"),
		"short layout hash":    join("ASSESSD", "1", fields[2], fields[3], "1", "0A1B2C3"),
		"lower-case hash":      join("ASSESSD", "1", fields[2], fields[3], "1", "0a1b2c3d"),
		"extra field":          join("ASSESSD", "1", fields[2], fields[3], "1", "0A1B2C3D", "X"),
		"too long":             good + strings.Repeat("0", 100),
	} {
		if _, err := answersheet.ParseSheetID(payload); !errors.Is(err, answersheet.ErrBadSheetID) {
			t.Errorf("%s: ParseSheetID(%q) error = %v, want ErrBadSheetID", name, payload, err)
		}
	}
}

func FuzzParseSheetID(f *testing.F) {
	f.Add(answersheet.SheetID{ExamID: ids.New(ids.Exam), UserID: ids.New(ids.User), Page: 1, LayoutHash: "0A1B2C3D"}.String())
	f.Add(answersheet.SheetID{ExamID: ids.New(ids.Exam), Page: 7, LayoutHash: "DEADBEEF"}.String())
	f.Add("ASSESSD:1:::::")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := answersheet.ParseSheetID(s)
		if err != nil {
			if !errors.Is(err, answersheet.ErrBadSheetID) {
				t.Fatalf("error %v does not wrap ErrBadSheetID", err)
			}
			return
		}
		// Whatever parses is canonical: it prints back to the same text.
		if id.String() != s {
			t.Fatalf("ParseSheetID(%q) = %+v, which prints as %q", s, id, id.String())
		}
	})
}

// swapFirst changes the first character of a ULID to another valid one.
func swapFirst(s string) string {
	if s[0] == '0' {
		return "1" + s[1:]
	}
	return "0" + s[1:]
}
