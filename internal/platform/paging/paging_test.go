package paging_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/platform/paging"
)

func token(after string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("v1:" + after))
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		size   int32
		token  string
		reason string // "" when valid
	}{
		{"defaults", 0, "", ""},
		{"largest page", paging.MaxSize, "", ""},
		{"an id cursor", 10, token("exm_01ARZ3NDEKTSV4RRFFQ69G5FAV"), ""},
		{"a type key cursor", 10, token("multiple_choice"), ""},
		{"negative size", -1, "", "INVALID_PAGE_SIZE"},
		{"too large", paging.MaxSize + 1, "", "INVALID_PAGE_SIZE"},
		{"not base64", 10, "!!!", "INVALID_PAGE_TOKEN"},
		{"no version", 10, base64.RawURLEncoding.EncodeToString([]byte("exm_1")), "INVALID_PAGE_TOKEN"},
		{"empty cursor", 10, token(""), "INVALID_PAGE_TOKEN"},
		{"NUL in cursor", 10, token("exm_\x00"), "INVALID_PAGE_TOKEN"},
		{"invalid UTF-8 in cursor", 10, token("\xff"), "INVALID_PAGE_TOKEN"},
		{"SQL in cursor", 10, token("x' OR 1=1"), "INVALID_PAGE_TOKEN"},
		{"long cursor", 10, token(strings.Repeat("a", 65)), "INVALID_PAGE_TOKEN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := paging.Parse(tc.size, tc.token)
			e, _ := errs.As(err)
			switch {
			case tc.reason == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.reason != "" && (e == nil || e.Reason != tc.reason || e.Kind != errs.KindInvalid):
				t.Fatalf("error %v, want reason %s", err, tc.reason)
			}
		})
	}
}

// TestTokensRoundTrip checks that a token Trim returns parses back to the
// last item of the page.
func TestTokensRoundTrip(t *testing.T) {
	p, _ := paging.Parse(2, "")
	items, next := paging.Trim(p, []string{"a_1", "b_2", "c_3"}, func(s string) string { return s })
	if len(items) != 2 || next == "" {
		t.Fatalf("Trim = %v, %q", items, next)
	}
	q, err := paging.Parse(2, next)
	if err != nil || q.After != "b_2" {
		t.Fatalf("Parse(next) = %+v, %v", q, err)
	}
}

// TestZeroPageIsADefaultPage: a Page built without a size pages like a
// request without pageSize instead of panicking in Trim.
func TestZeroPageIsADefaultPage(t *testing.T) {
	var p paging.Page
	items := make([]string, p.Limit())
	for i := range items {
		items[i] = fmt.Sprintf("id_%03d", i)
	}
	page, next := paging.Trim(p, items, func(s string) string { return s })
	if p.Limit() != paging.DefaultSize+1 || len(page) != paging.DefaultSize || next == "" {
		t.Fatalf("zero page: limit %d, %d items, next %q", p.Limit(), len(page), next)
	}
}

// FuzzParse checks that any size and token either parse into a bounded
// page whose cursor is plain ASCII, or fail as invalid input.
func FuzzParse(f *testing.F) {
	f.Add(int32(0), "")
	f.Add(int32(50), token("usr_01ARZ3NDEKTSV4RRFFQ69G5FAV"))
	f.Add(int32(-1), "djE6")
	f.Add(int32(201), "!!!")
	f.Add(int32(10), token("a\x00"))
	f.Fuzz(func(t *testing.T, size int32, tok string) {
		p, err := paging.Parse(size, tok)
		if err != nil {
			if !errs.Is(err, errs.KindInvalid) {
				t.Fatalf("Parse(%d, %q): %v is not invalid input", size, tok, err)
			}
			return
		}
		if p.Size < 1 || p.Size > paging.MaxSize {
			t.Fatalf("Parse(%d, %q) size %d", size, tok, p.Size)
		}
		if !utf8.ValidString(p.After) || strings.ContainsAny(p.After, "\x00'\" ;") || len(p.After) > 64 {
			t.Fatalf("Parse(%d, %q) cursor %q", size, tok, p.After)
		}
	})
}
