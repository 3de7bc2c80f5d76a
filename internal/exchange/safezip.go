package exchange

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"net/url"
	"path"
	"strings"
)

// Limits bound what an import reads. Every bound is checked against the
// bytes actually read, never against what an archive's headers claim.
type Limits struct {
	// MaxBody is the most bytes of request body read.
	MaxBody int64
	// MaxEntries is the most entries (files and folders) an archive may hold.
	MaxEntries int
	// MaxEntryBytes is the most uncompressed bytes read from one entry.
	MaxEntryBytes int64
	// MaxTotalBytes is the most uncompressed bytes read from all entries.
	MaxTotalBytes int64
}

// DefaultLimits fit an exam of assessd's largest size with room for the
// XML verbosity of other tools, and refuse decompression bombs long before
// they cost memory: a 1,000-item QTI package is about 3 MB unpacked.
var DefaultLimits = Limits{MaxBody: 32 << 20, MaxEntries: 5000, MaxEntryBytes: 4 << 20, MaxTotalBytes: 64 << 20}

// readBody reads at most l.MaxBody bytes and refuses a longer body.
func readBody(r io.Reader, l Limits) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, l.MaxBody+1))
	if err != nil {
		return nil, malformed("could not be read").WithCause(err)
	}
	if int64(len(b)) > l.MaxBody {
		return nil, tooLarge("must be at most %d bytes", l.MaxBody)
	}
	return b, nil
}

// archive is a validated zip archive whose entries are read within Limits.
type archive struct {
	files    map[string]*zip.File
	limits   Limits
	unpacked int64 // uncompressed bytes read so far, over all entries
}

// openArchive checks every entry name before anything is read: a name that
// is absolute, climbs out with "..", uses backslashes or a drive letter, or
// appears twice refuses the whole package.
func openArchive(body []byte, l Limits) (*archive, error) {
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return nil, importError(ReasonNotPackage, "is not a zip archive").WithCause(err)
	}
	if len(zr.File) > l.MaxEntries {
		return nil, tooLarge("the package holds more than %d entries", l.MaxEntries)
	}
	a := &archive{files: make(map[string]*zip.File, len(zr.File)), limits: l}
	for _, f := range zr.File {
		name, ok := safeEntryName(f.Name)
		if !ok {
			return nil, importError(ReasonUnsafePath, "the package entry %q points outside the package", truncate(f.Name, 200))
		}
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		if _, dup := a.files[name]; dup {
			return nil, malformed("the package holds %q twice", truncate(name, 200))
		}
		a.files[name] = f
	}
	return a, nil
}

// safeEntryName returns the canonical form of a relative, contained name.
func safeEntryName(name string) (string, bool) {
	if name == "" || strings.ContainsAny(name, "\\\x00") || strings.HasPrefix(name, "/") ||
		(len(name) >= 2 && name[1] == ':') {
		return "", false
	}
	for _, part := range strings.Split(strings.TrimSuffix(name, "/"), "/") {
		if part == ".." {
			return "", false
		}
	}
	clean := path.Clean(name)
	return clean, clean != "." && !strings.HasPrefix(clean, "../")
}

// has reports whether the package holds name.
func (a *archive) has(name string) bool {
	_, ok := a.files[name]
	return ok
}

// read returns an entry's bytes, counting what is really decompressed.
func (a *archive) read(name string) ([]byte, error) {
	f, ok := a.files[name]
	if !ok {
		return nil, malformed("the package has no entry %q", truncate(name, 200))
	}
	rc, err := f.Open()
	if err != nil {
		return nil, malformed("the package entry %q cannot be read", truncate(name, 200)).WithCause(err)
	}
	defer rc.Close()
	budget := min(a.limits.MaxEntryBytes, a.limits.MaxTotalBytes-a.unpacked)
	b, err := io.ReadAll(io.LimitReader(rc, budget+1))
	a.unpacked += int64(len(b))
	if int64(len(b)) > budget {
		if a.unpacked > a.limits.MaxTotalBytes {
			return nil, tooLarge("the package unpacks to more than %d bytes", a.limits.MaxTotalBytes)
		}
		return nil, tooLarge("the package entry %q unpacks to more than %d bytes", truncate(name, 200), a.limits.MaxEntryBytes)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, malformed("the package entry %q is corrupt", truncate(name, 200)).WithCause(err)
	}
	return b, nil
}

// resolve turns an href found in the entry base into a package entry name.
// ok is false for external URLs; an href that climbs out of the package is
// an error.
func resolve(base, href string) (name string, ok bool, err error) {
	u, perr := url.Parse(strings.TrimSpace(href))
	if perr != nil || u.Scheme != "" || u.Host != "" {
		return "", false, nil
	}
	p, perr := url.PathUnescape(u.Path)
	if perr != nil || p == "" || strings.HasPrefix(p, "/") {
		return "", false, importError(ReasonUnsafePath, "the reference %q points outside the package", truncate(href, 200))
	}
	joined := path.Join(path.Dir(base), p)
	name, safe := safeEntryName(joined)
	if !safe || strings.Contains(p, "\\") {
		return "", false, importError(ReasonUnsafePath, "the reference %q points outside the package", truncate(href, 200))
	}
	return name, true, nil
}

// truncate keeps client-visible echoes of input short.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
