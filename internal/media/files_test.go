package media_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

func pngBytes(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// student returns a context acting as a student of a new organization.
func student(t *testing.T, ten *tenancy.Service) context.Context {
	t.Helper()
	ctx := context.Background()
	org, err := ten.CreateOrg(ctx, tenancy.NewOrg{Name: "School", Country: "DE"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := ten.CreateUser(tenancy.WithCaller(ctx, tenancy.SystemCaller(org.ID)), tenancy.NewUser{Email: org.ID + "@x.test", Name: "s", Role: tenancy.RoleStudent})
	if err != nil {
		t.Fatal(err)
	}
	return tenancy.WithCaller(ctx, &tenancy.Caller{Kind: tenancy.KindEmbed, OrgID: org.ID, UserID: u.ID, Role: tenancy.RoleStudent,
		Scopes: []tenancy.Scope{tenancy.ScopeExamsRead, tenancy.ScopeResultsWrite}})
}

func TestFilesPutGetAndLimits(t *testing.T) {
	db := storetest.New(t)
	ten := tenancy.NewService(db)
	files := media.NewFiles(db, "http://127.0.0.1:8080/", 1024)
	a, b := student(t, ten), student(t, ten)
	data := pngBytes(t)

	u, err := files.Put(a, "file", `C:\photos\my plant<1>.png`, data)
	if err != nil {
		t.Fatal(err)
	}
	id, name, ok := strings.Cut(strings.TrimPrefix(u, "http://127.0.0.1:8080/media/"), "/")
	if !ok || !strings.HasPrefix(id, "med_") || len(id) != 36 || name != "my_plant_1_.png" {
		t.Fatalf("URL %s", u)
	}
	// The URL is the capability: Open needs no caller.
	got, err := files.Open(context.Background(), id, name)
	if err != nil {
		t.Fatal(err)
	}
	if content, err := io.ReadAll(got.Content); err != nil || !bytes.Equal(content, data) || got.Size != int64(len(data)) ||
		got.ContentType != "image/png" || !got.Image() {
		t.Fatalf("open: %s, %d bytes, read %d bytes, %v", got.ContentType, got.Size, len(content), err)
	}
	for _, bad := range [][2]string{{id, "other.png"}, {"med_" + strings.Repeat("a", 32), name}, {"../x", name}} {
		if _, err := files.Open(context.Background(), bad[0], bad[1]); !errs.Is(err, errs.KindNotFound) {
			t.Errorf("get %v: %v, want not found", bad, err)
		}
	}

	// Row-level security: organization b's statements see none of a's files.
	var seen int
	for ctx, want := range map[context.Context]int{a: 1, b: 0} {
		if err := db.Q(ctx).QueryRow(ctx, `SELECT count(*) FROM media_files`).Scan(&seen); err != nil || seen != want {
			t.Errorf("rows visible to an organization: %d, want %d (%v)", seen, want, err)
		}
	}

	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"big.png", append(pngBytes(t), make([]byte, 1024)...), "too large"},
		{"page.html", []byte("<!doctype html><script>alert(1)</script>"), "must be an image"},
		{"empty.txt", nil, "must be an image"},
	} {
		if _, err := files.Put(b, "file", c.name, c.data); !errs.Is(err, errs.KindInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want invalid %q", c.name, err, c.want)
		}
	}
	if _, err := files.Put(context.Background(), "file", "x.png", data); err == nil {
		t.Error("stored a file without a caller")
	}
}

// A file is read a chunk at a time and seeks anywhere: reads across chunk
// boundaries and from the middle give the stored bytes, and a file deleted
// while read ends the read with an error rather than short content.
func TestOpenReadsInChunks(t *testing.T) {
	db, owner := openWithOwner(t)
	files := media.NewFiles(db, "http://127.0.0.1:8080/", 2<<20)
	a := student(t, tenancy.NewService(db))
	data := pngBytes(t)
	for i := len(data); len(data) < 700<<10; i++ {
		data = append(data, byte(i*7))
	}
	u, err := files.Put(a, "file", "big.png", data)
	if err != nil {
		t.Fatal(err)
	}
	id, name, _ := strings.Cut(strings.TrimPrefix(u, "http://127.0.0.1:8080/media/"), "/")
	f, err := files.Open(context.Background(), id, name)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(f.Content); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d of %d bytes: %v", len(got), len(data), err)
	}
	for _, off := range []int64{0, 1, 256<<10 - 3, 512 << 10, int64(len(data)) - 10} {
		if _, err := f.Content.Seek(off, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 10)
		if _, err := io.ReadFull(f.Content, got); err != nil || !bytes.Equal(got, data[off:off+10]) {
			t.Errorf("10 bytes at %d: %v, %v", off, got, err)
		}
	}
	if _, err := f.Content.Seek(300<<10, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Exec(a, `DELETE FROM media_files WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(f.Content); err == nil {
		t.Errorf("read %d bytes of a deleted file without an error", len(got))
	}
}

func TestAccepts(t *testing.T) {
	for _, c := range []struct {
		accepted []string
		ct       string
		want     bool
	}{
		{nil, "image/png", true},
		{[]string{"image/*"}, "image/jpeg", true},
		{[]string{"image/*"}, "application/pdf", false},
		{[]string{".pdf"}, "application/pdf", true},
		{[]string{"image/png"}, "text/plain; charset=utf-8", false},
		{[]string{"text/plain"}, "text/plain; charset=utf-8", true},
	} {
		if got := media.Accepts(c.accepted, c.ct); got != c.want {
			t.Errorf("Accepts(%v, %s) = %v", c.accepted, c.ct, got)
		}
	}
}

// TestDiscardTakesOnlyTheCallersUnnamedUploads: Discard deletes a file its
// caller uploaded, but not another student's (of the same or another
// organization), one an answer names, or a URL off assessd's media.
func TestDiscardTakesOnlyTheCallersUnnamedUploads(t *testing.T) {
	db, owner := openWithOwner(t)
	ten := tenancy.NewService(db)
	files := media.NewFiles(db, "http://127.0.0.1:8080/", 1024)
	a, stranger := student(t, ten), student(t, ten)
	caller := callerOf(a)
	classmate, err := ten.CreateUser(tenancy.WithCaller(context.Background(), tenancy.SystemCaller(caller.OrgID)),
		tenancy.NewUser{Email: "c@x.test", Name: "c", Role: tenancy.RoleStudent})
	if err != nil {
		t.Fatal(err)
	}
	mate := *caller
	mate.UserID = classmate.ID
	put := func() (url, id, name string) {
		u, err := files.Put(a, "file", "x.png", pngBytes(t))
		if err != nil {
			t.Fatal(err)
		}
		id, name, _ = strings.Cut(strings.TrimPrefix(u, "http://127.0.0.1:8080/media/"), "/")
		return u, id, name
	}
	exists := func(id, name string) bool {
		_, err := files.Open(context.Background(), id, name)
		return err == nil
	}
	own, ownID, ownName := put()
	named, namedID, namedName := put()
	if _, err := owner.Exec(a, `UPDATE media_files SET attached = true WHERE id = $1`, namedID); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ctx context.Context
		url string
	}{
		{stranger, own}, {tenancy.WithCaller(context.Background(), &mate), own}, {a, named},
		{a, "https://cdn.example/media/" + ownID + "/" + ownName},
	} {
		if err := files.Discard(c.ctx, c.url); err != nil {
			t.Fatal(err)
		}
	}
	if !exists(ownID, ownName) || !exists(namedID, namedName) {
		t.Fatalf("discards by others, of a named file or of a foreign URL deleted a file: own %v, named %v",
			exists(ownID, ownName), exists(namedID, namedName))
	}
	if err := files.Discard(a, own); err != nil || exists(ownID, ownName) {
		t.Fatalf("the uploader's discard: %v, file still there %v", err, exists(ownID, ownName))
	}
}

// TestPendingUploadsAreBounded: an uploader holds at most PendingBytes of
// files that no answer names, even uploading concurrently; a file an
// answer names makes room, and other uploaders have their own bound.
func TestPendingUploadsAreBounded(t *testing.T) {
	db, owner := openWithOwner(t)
	ten := tenancy.NewService(db)
	const size = 1024
	files := media.NewFiles(db, "http://127.0.0.1:8080/", size)
	a, b := student(t, ten), student(t, ten)
	data := append(pngBytes(t), make([]byte, size)...)[:size]
	for range media.PendingUploads - 2 {
		if _, err := files.Put(a, "file", "x.png", data); err != nil {
			t.Fatal(err)
		}
	}
	// Four uploads race for the last two places.
	var wg sync.WaitGroup
	results := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			_, err := files.Put(a, "file", "x.png", data)
			results <- err
		})
	}
	wg.Wait()
	close(results)
	stored, refused := 0, 0
	for err := range results {
		if e, ok := errs.As(err); ok && e.Kind == errs.KindConflict && e.Reason == "PENDING_UPLOADS_FULL" {
			refused++
		} else if err == nil {
			stored++
		} else {
			t.Fatal(err)
		}
	}
	if stored != 2 || refused != 2 {
		t.Fatalf("racing for the last 2 places: %d stored, %d refused; want 2 and 2", stored, refused)
	}
	if _, err := files.Put(b, "file", "x.png", data); err != nil {
		t.Fatalf("another uploader: %v", err)
	}
	if _, err := owner.Exec(context.Background(), `UPDATE media_files SET attached = true
		WHERE id = (SELECT min(id) FROM media_files WHERE uploaded_by = $1)`, callerOf(a).UserID); err != nil {
		t.Fatal(err)
	}
	if _, err := files.Put(a, "file", "x.png", data); err != nil {
		t.Fatalf("after an answer named a file: %v", err)
	}
}

func callerOf(ctx context.Context) *tenancy.Caller {
	c, _ := tenancy.CallerFrom(ctx)
	return c
}

// openWithOwner returns a fresh database, and a connection to it as the
// schema's owner, outside row-level security.
func openWithOwner(t *testing.T) (*store.DB, *pgx.Conn) {
	t.Helper()
	url := storetest.NewURL(t)
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	owner, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Close(context.Background()) })
	return db, owner
}
