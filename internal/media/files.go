package media

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// DefaultMaxUploadBytes is the size limit of an uploaded file
// (ASSESSD_MEDIA_MAX_UPLOAD_BYTES).
const DefaultMaxUploadBytes = 10 << 20

// UploadPermission is what storing a file takes: results:write, from
// any role (students upload their answers' files).
var UploadPermission = tenancy.Permission{Scope: tenancy.ScopeResultsWrite}

// Files stores uploaded answer files in PostgreSQL and names them by
// capability URLs under {base URL}/media/ (decision 0121), which always
// count as the media CDN.
type Files struct {
	db       *store.DB
	prefix   string
	maxBytes int64
}

// NewFiles returns the file store whose URLs start with baseURL; maxBytes
// <= 0 means DefaultMaxUploadBytes.
func NewFiles(db *store.DB, baseURL string, maxBytes int64) *Files {
	return &Files{db: db, prefix: PrefixOf(baseURL), maxBytes: orDefault(maxBytes, DefaultMaxUploadBytes)}
}

// PrefixOf is the URL prefix of the files served under baseURL.
func PrefixOf(baseURL string) string { return strings.TrimSuffix(baseURL, "/") + "/media/" }

// MaxBytes is the size limit of a file.
func (f *Files) MaxBytes() int64 { return f.maxBytes }

// File is a stored file.
type File struct {
	ID, Name, ContentType string
	Size                  int64
	Content               io.ReadSeeker
}

// Image reports whether a browser may show the file inline.
func (f File) Image() bool { return strings.HasPrefix(f.ContentType, "image/") }

// Sniff returns the media type of data, parameters included (a text's
// charset), when it is one of DefaultAllowedTypes. The type a client
// declares is never trusted.
func Sniff(data []byte) (string, bool) {
	ct := http.DetectContentType(data)
	mt, _, err := mime.ParseMediaType(ct)
	return ct, err == nil && slices.Contains(DefaultAllowedTypes, mt)
}

// Accepts reports whether contentType matches one of a question's
// acceptedTypes: a media type ("image/png"), a wildcard ("image/*") or an
// extension (".pdf"). No list accepts every allowed type.
func Accepts(accepted []string, contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	if len(accepted) == 0 {
		return true
	}
	for _, a := range accepted {
		a = strings.ToLower(strings.TrimSpace(a))
		if strings.HasPrefix(a, ".") {
			a, _, _ = mime.ParseMediaType(mime.TypeByExtension(a))
		}
		if a == mt || (strings.HasSuffix(a, "/*") && strings.HasPrefix(mt, strings.TrimSuffix(a, "*"))) {
			return true
		}
	}
	return false
}

// Put stores data uploaded as name for the caller's organization and
// returns its URL; a file over the limit or of a type not allowed is
// errs.KindInvalid on field.
func (f *Files) Put(ctx context.Context, field, name string, data []byte) (string, error) {
	caller, err := tenancy.Authorize(ctx, UploadPermission)
	if err != nil {
		return "", err
	}
	if int64(len(data)) > f.maxBytes {
		return "", errs.Invalid(field, "is too large: at most %s", Size(f.maxBytes))
	}
	ct, ok := Sniff(data)
	if !ok || len(data) == 0 {
		return "", errs.Invalid(field, "must be an image (PNG, JPEG, GIF, WebP), a PDF or plain text")
	}
	file := File{ID: newFileID(), Name: safeName(name), ContentType: ct}
	err = f.db.Tx(ctx, func(ctx context.Context) error {
		q := f.db.Q(ctx)
		// One uploader's files are stored one at a time, so two uploads at
		// once cannot both pass the bound.
		if _, err := q.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('uploads:' || $1))`, caller.UserID); err != nil {
			return fmt.Errorf("media: lock uploads: %w", err)
		}
		tag, err := q.Exec(ctx, `INSERT INTO media_files (id, org_id, name, content_type, content, uploaded_by)
			SELECT $1, app_org_id(), $2, $3, $4::bytea, $5::text
			 WHERE (SELECT coalesce(sum(octet_length(content)), 0) FROM media_files
			         WHERE org_id = app_org_id() AND uploaded_by = $5 AND NOT attached) + octet_length($4::bytea) <= $6::bigint`,
			file.ID, file.Name, file.ContentType, data, caller.UserID, f.PendingBytes())
		if err != nil {
			return fmt.Errorf("media: store file: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return errs.Conflict(ReasonPendingFull, "your files not yet submitted in an answer reach %s; submit or remove some first", Size(f.PendingBytes()))
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return f.prefix + file.ID + "/" + file.Name, nil
}

// ReasonPendingFull refuses an upload past PendingBytes.
const ReasonPendingFull = "PENDING_UPLOADS_FULL"

// PendingUploads is how many files of the largest size one uploader may
// hold that no stored answer names yet (decision 0158): enough for an
// exam's file answers, while a key or a session cannot fill the database
// with uploads it never submits.
const PendingUploads = 50

// PendingBytes bounds the bytes of one uploader's files that no stored
// answer names yet: PendingUploads files at the size limit.
func (f *Files) PendingBytes() int64 { return PendingUploads * f.maxBytes }

// Discard deletes the file at fileURL when the caller uploaded it and no
// stored answer names it yet: a file the student took back out of a draft
// (decision 0155). Any other URL is left alone.
func (f *Files) Discard(ctx context.Context, fileURL string) error {
	caller, err := tenancy.Authorize(ctx, UploadPermission)
	if err != nil {
		return err
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(fileURL, f.prefix), "/")
	if !strings.HasPrefix(fileURL, f.prefix) || !validFileID(id) {
		return nil
	}
	if _, err := f.db.Q(ctx).Exec(ctx, `DELETE FROM media_files WHERE id = $1 AND uploaded_by = $2 AND NOT attached`,
		id, caller.UserID); err != nil {
		return fmt.Errorf("media: discard file: %w", err)
	}
	return nil
}

// UnattachedRetention is how long an uploaded file is kept when no answer
// names it (decision 0155): longer than any embed session, so a draft's
// files last until it is submitted or given up on.
const UnattachedRetention = 7 * 24 * time.Hour

// SweepUnattached deletes the files uploaded more than UnattachedRetention
// before now that no stored answer has named (migration 028); a file an
// answer names goes with its answers instead (decision 0154). App.Start
// runs it periodically, off the request path.
func (f *Files) SweepUnattached(ctx context.Context, now time.Time) error {
	_, err := f.db.SweepBefore(ctx, "sweep_unattached_media", now.Add(-UnattachedRetention))
	return err
}

// Open returns the file at /media/{id}/{name}, whoever asks: the URL is
// the capability. Unknown ids and names are errs.KindNotFound. Its Content
// reads the bytes as they are read, within ctx.
func (f *Files) Open(ctx context.Context, id, name string) (File, error) {
	notFound := errs.NotFound("media file")
	if !validFileID(id) {
		return File{}, notFound
	}
	var org *string
	if err := f.db.Unscoped().QueryRow(ctx, `SELECT media_file_org($1)`, id).Scan(&org); err != nil {
		return File{}, fmt.Errorf("media: look file up: %w", err)
	}
	if org == nil {
		return File{}, notFound
	}
	ctx = store.WithOrg(ctx, *org)
	file := File{ID: id}
	err := f.db.Q(ctx).QueryRow(ctx, `SELECT name, content_type, octet_length(content) FROM media_files WHERE id = $1`, id).
		Scan(&file.Name, &file.ContentType, &file.Size)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && file.Name != name) {
		return File{}, notFound
	}
	if err != nil {
		return File{}, fmt.Errorf("media: read file: %w", err)
	}
	file.Content = &content{ctx: ctx, db: f.db, id: id, size: file.Size}
	return file, nil
}

// chunkSize is how much of a file one database read fetches: serving a
// file holds one chunk of it, not all of it (decision 0167).
const chunkSize = 256 << 10

// content reads a stored file's bytes a chunk at a time as they are read,
// and seeks, for http.ServeContent (ranges, HEAD). A stored file never
// changes, so chunks read apart make one file; one deleted meanwhile ends
// the read with an error.
type content struct {
	ctx   context.Context // the request's: the reader lives within it
	db    *store.DB
	id    string
	size  int64
	off   int64
	chunk []byte // the file's bytes from at on
	at    int64
}

func (c *content) Read(p []byte) (int, error) {
	if c.off >= c.size {
		return 0, io.EOF
	}
	if c.off < c.at || c.off >= c.at+int64(len(c.chunk)) {
		if err := c.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, c.chunk[c.off-c.at:])
	c.off += int64(n)
	return n, nil
}

// fill reads the chunk that starts at the offset, into the same buffer.
func (c *content) fill() error {
	buf := pgtype.PreallocBytes(c.chunk[:cap(c.chunk)])
	if buf == nil {
		buf = make([]byte, chunkSize)
	}
	err := c.db.Q(c.ctx).QueryRow(c.ctx, `SELECT substring(content FROM $2 FOR $3) FROM media_files WHERE id = $1`,
		c.id, c.off+1, chunkSize).Scan(&buf)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && len(buf) == 0) {
		return io.ErrUnexpectedEOF // deleted or cut short while read
	}
	if err != nil {
		return fmt.Errorf("media: read file: %w", err)
	}
	c.chunk, c.at = buf, c.off
	return nil
}

func (c *content) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += c.off
	case io.SeekEnd:
		offset += c.size
	}
	if offset < 0 {
		return 0, errors.New("media: seek before the start")
	}
	c.off = offset
	return offset, nil
}

// Size formats a byte count for people ("10 MiB").
func Size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	if n >= 1<<10 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// safeName keeps a file name's base in letters, digits, '.', '-' and '_'
// (at most 100 bytes), so it reads well in the URL and needs no escaping
// in a path or a Content-Disposition header.
func safeName(name string) string {
	name = path.Base(strings.ReplaceAll(name, `\`, "/"))
	var b strings.Builder
	for _, r := range name {
		switch {
		case r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_'):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := strings.TrimLeft(b.String(), ".")
	if len(out) > 100 {
		out = out[len(out)-100:]
	}
	if out == "" {
		return "file"
	}
	return out
}

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newFileID returns "med_" and 160 random bits: the URL is a capability,
// so its id must not be guessable (a ULID's is partly a clock).
func newFileID() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return "med_" + strings.ToLower(idEncoding.EncodeToString(b))
}

func validFileID(id string) bool {
	rest, ok := strings.CutPrefix(id, "med_")
	if !ok || len(rest) != 32 {
		return false
	}
	_, err := idEncoding.DecodeString(strings.ToUpper(rest))
	return err == nil
}
