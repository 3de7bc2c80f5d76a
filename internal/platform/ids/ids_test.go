package ids_test

import (
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/platform/ids"
)

func TestValid(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{ids.New(ids.Exam), true},
		{"exm_01ARZ3NDEKTSV4RRFFQ69G5FAV", true},
		{"qst_01ARZ3NDEKTSV4RRFFQ69G5FAV", false}, // another type
		{"exm_01ARZ3NDEKTSV4RRFFQ69G5FA", false},  // short
		{"exm_01ARZ3NDEKTSV4RRFFQ69G5FAVX", false},
		{"exm_81ARZ3NDEKTSV4RRFFQ69G5FAV", false}, // beyond the ULID range
		{"exm_01ARZ3NDEKTSV4RRFFQ69G5FA\x00", false},
		{"exm_01ARZ3NDEKTSV4RRFFQ69G5FAÜ", false},
		{"exm_", false},
		{"", false},
	} {
		if got := ids.Valid(ids.Exam, tc.s); got != tc.want {
			t.Errorf("Valid(exm_, %q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

// FuzzValid checks that an id Valid accepts is its prefix and 26 characters
// of the Crockford base-32 alphabet, so nothing else reaches a query.
func FuzzValid(f *testing.F) {
	for _, s := range []string{ids.New(ids.User), "usr_01ARZ3NDEKTSV4RRFFQ69G5FAV", "usr_01arz3ndektsv4rrffq69g5fav", "usr_\x00", "usr_ZZZZZZZZZZZZZZZZZZZZZZZZZZ", "exm_01ARZ3NDEKTSV4RRFFQ69G5FAV"} {
		f.Add(s)
	}
	const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghjkmnpqrstvwxyz"
	f.Fuzz(func(t *testing.T, s string) {
		if !ids.Valid(ids.User, s) {
			return
		}
		rest, ok := strings.CutPrefix(s, string(ids.User))
		if !ok || len(rest) != 26 {
			t.Fatalf("Valid accepted %q", s)
		}
		for _, c := range rest {
			if !strings.ContainsRune(alphabet, c) {
				t.Fatalf("Valid accepted %q with %q", s, c)
			}
		}
	})
}
