package media

import (
	"net/url"
	"strings"
)

// prefix is one parsed ASSESSD_MEDIA_CDN entry.
type prefix struct {
	scheme string
	host   string // lower case, with the port if any
	path   string // without a trailing slash; "" for the whole host
}

// parsePrefix accepts an absolute http(s) URL with a host and nothing but
// a path after it.
func parsePrefix(raw string) (prefix, bool) {
	u, ok := parseStrict(raw)
	if !ok || u.RawQuery != "" || u.Fragment != "" {
		return prefix{}, false
	}
	return prefix{scheme: u.Scheme, host: strings.ToLower(u.Host), path: strings.TrimSuffix(u.Path, "/")}, true
}

// match reports whether u lies under p. Scheme and host compare exactly, so
// cdn.example.evil.com or an http URL under an https prefix do not match;
// the path must continue p's path at a segment boundary, so /media-private
// is not under /media.
func (p prefix) match(u *url.URL) bool {
	if u.Scheme != p.scheme || strings.ToLower(u.Host) != p.host {
		return false
	}
	return u.Path == p.path || strings.HasPrefix(u.Path, p.path+"/")
}

// parseStrict parses an absolute http(s) URL and refuses the forms that let
// a URL mean something else to the CDN than to a prefix comparison:
// userinfo (https://cdn@evil), opaque URLs, encoded slashes or backslashes
// (..%2f), dot segments, and control characters.
func parseStrict(raw string) (*url.URL, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.User != nil || u.Host == "" {
		return nil, false
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, false
	}
	escaped := strings.ToLower(u.EscapedPath())
	if strings.Contains(escaped, "%2f") || strings.Contains(escaped, "%5c") {
		return nil, false
	}
	if strings.ContainsFunc(u.Path, func(r rune) bool { return r == '\\' || r < 0x20 || r == 0x7f }) {
		return nil, false
	}
	for seg := range strings.SplitSeq(u.Path, "/") {
		if seg == "." || seg == ".." {
			return nil, false
		}
	}
	return u, true
}
