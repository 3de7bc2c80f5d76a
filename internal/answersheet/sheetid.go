package answersheet

import (
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"

	"github.com/assessd/assessd/internal/platform/ids"
)

// SheetID is what a sheet's QR code says: which exam, which student (none on
// a sheet with a name box), which page of the student's sheet, and a
// fingerprint of the layout the page was printed with.
type SheetID struct {
	ExamID     string // an "exm_" id
	UserID     string // a "usr_" id, or "" on a sheet with a name box
	Page       int    // 1-based
	LayoutHash string // 8 upper-case hex digits, Page.Hash
}

// sheetIDPrefix starts every payload; "1" is the format version.
const sheetIDPrefix = "ASSESSD:1:"

// maxSheetIDLen bounds what the parser looks at.
const maxSheetIDLen = 128

// String encodes the identifier as
// ASSESSD:1:<exam ULID>:<user ULID or empty>:<page>:<layout hash>:<CRC-32>.
// Everything is upper-case letters, digits and colons, so the QR code uses
// its compact alphanumeric mode and stays small (see qrLevel).
func (s SheetID) String() string {
	body := sheetIDPrefix + strings.TrimPrefix(s.ExamID, string(ids.Exam)) + ":" +
		strings.TrimPrefix(s.UserID, string(ids.User)) + ":" + strconv.Itoa(s.Page) + ":" + s.LayoutHash
	return body + ":" + checksum(body)
}

func checksum(body string) string { return fmt.Sprintf("%08X", crc32.ChecksumIEEE([]byte(body))) }

// ParseSheetID parses a QR payload strictly. Every failure wraps
// ErrBadSheetID.
func ParseSheetID(payload string) (SheetID, error) {
	bad := func(why string) (SheetID, error) { return SheetID{}, fmt.Errorf("%w: %s", ErrBadSheetID, why) }
	if len(payload) > maxSheetIDLen {
		return bad("too long")
	}
	rest, ok := strings.CutPrefix(payload, sheetIDPrefix)
	if !ok {
		return bad("not an assessd answer sheet")
	}
	f := strings.Split(rest, ":")
	if len(f) != 5 {
		return bad("wrong number of fields")
	}
	if sum := f[4]; sum != checksum(payload[:len(payload)-len(sum)-1]) {
		return bad("checksum mismatch")
	}
	s := SheetID{ExamID: string(ids.Exam) + f[0], LayoutHash: f[3]}
	if !ids.Valid(ids.Exam, s.ExamID) {
		return bad("malformed exam id")
	}
	if f[1] != "" {
		s.UserID = string(ids.User) + f[1]
		if !ids.Valid(ids.User, s.UserID) {
			return bad("malformed user id")
		}
	}
	page, err := strconv.Atoi(f[2])
	if err != nil || page < 1 || page > maxPages || strconv.Itoa(page) != f[2] {
		return bad("malformed page number")
	}
	s.Page = page
	if !isLayoutHash(s.LayoutHash) {
		return bad("malformed layout hash")
	}
	return s, nil
}

func isLayoutHash(h string) bool {
	if len(h) != 8 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return true
}
