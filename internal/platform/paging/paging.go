// Package paging implements the API's cursor pagination: pageSize and an
// opaque pageToken that names the last id of the previous page. Ids sort
// by creation time, so pages stay stable while new rows are inserted.
package paging

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"

	"github.com/assessd/assessd/internal/platform/errs"
)

// DefaultSize and MaxSize bound a page (API.md).
const (
	DefaultSize = 50
	MaxSize     = 200
)

// Page is a parsed page request.
type Page struct {
	// Size is the number of items to return.
	Size int
	// After is the id after which (in the list's order) the page starts;
	// empty for the first page.
	After string
}

const tokenVersion = "v1:"

// Parse validates pageSize and pageToken. Errors carry the reasons
// INVALID_PAGE_SIZE and INVALID_PAGE_TOKEN, as do the transcoder's errors
// for values that are not numbers at all.
func Parse(size int32, token string) (Page, error) {
	p := Page{Size: int(size)}
	switch {
	case size == 0:
		p.Size = DefaultSize
	case size < 0 || size > MaxSize:
		return Page{}, invalid("pageSize", "INVALID_PAGE_SIZE", fmt.Sprintf("must be between 1 and %d", MaxSize))
	}
	if token == "" {
		return p, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	after, ok := strings.CutPrefix(string(raw), tokenVersion)
	if err != nil || !ok || !cursor.MatchString(after) {
		return Page{}, invalid("pageToken", "INVALID_PAGE_TOKEN", "is not a token returned by this list")
	}
	p.After = after
	return p, nil
}

// cursor is the shape of what a token may point after: an id, or the key
// of a built-in question type. Anything else never reaches a query.
var cursor = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func invalid(field, reason, msg string) error {
	e := errs.Invalid(field, "%s", msg)
	e.Reason = reason
	return e
}

// Limit is the row count to query: one more than the page, to learn
// whether another page follows.
func (p Page) Limit() int { return p.size() + 1 }

// size is the page's size; a Page built without one (the zero Page) is a
// page of DefaultSize, as a request without pageSize is.
func (p Page) size() int {
	if p.Size <= 0 {
		return DefaultSize
	}
	return p.Size
}

// Trim cuts items fetched with Limit to the page and returns the token of
// the next page ("" on the last page); id returns an item's id.
func Trim[T any](p Page, items []T, id func(T) string) ([]T, string) {
	if len(items) <= p.size() {
		return items, ""
	}
	items = items[:p.size()]
	return items, TokenAfter(id(items[len(items)-1]))
}

// TokenAfter is the token of the page that starts after id, for a list
// that ends a page before its size.
func TokenAfter(id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(tokenVersion + id))
}
