package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/media"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// TestEmbedFileUploadServedFromMedia uploads a file answer through the
// whole server and reads it back, unauthenticated, from /media/.
func TestEmbedFileUploadServedFromMedia(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	teacher := tn.Keys[tenancy.RoleTeacher]
	exam, q := fileUploadExam(e, teacher)
	sess := e.Do("POST", "/embed-sessions", teacher, map[string]any{"flow": "student-exam", "actor": tn.Users[tenancy.RoleStudent].ID,
		"examId": exam}).Must(t, http.StatusOK)

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, _ := mw.CreateFormFile("file", "notes.txt")
	_, _ = part.Write([]byte("leaves are green"))
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, apptest.Str(sess.Body, "url")+"/files/"+q, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("HX-Request", "true")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	list, _ := io.ReadAll(res.Body)
	res.Body.Close()
	fileURL := regexp.MustCompile(`href="([^"]+/notes\.txt)"`).FindStringSubmatch(string(list))
	if res.StatusCode != http.StatusOK || fileURL == nil || !strings.HasPrefix(fileURL[1], e.Srv.URL+"/media/med_") {
		t.Fatalf("upload: %d %s", res.StatusCode, list)
	}
	res, err = http.Get(fileURL[1])
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || string(data) != "leaves are green" || res.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
		res.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(res.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("serving: %d %v", res.StatusCode, res.Header)
	}
	// Served a chunk at a time: ranges, HEAD and revalidation work as on a CDN.
	for _, c := range []struct {
		method, header, value string
		status                int
		body, length          string
	}{
		{"GET", "Range", "bytes=7-9", http.StatusPartialContent, "are", "3"},
		{"HEAD", "", "", http.StatusOK, "", "16"},
		{"GET", "If-None-Match", res.Header.Get("ETag"), http.StatusNotModified, "", ""},
	} {
		req, _ := http.NewRequest(c.method, fileURL[1], nil)
		if c.header != "" {
			req.Header.Set(c.header, c.value)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != c.status || string(data) != c.body || res.Header.Get("Content-Length") != c.length {
			t.Errorf("%s %s %q: %d %q, length %q", c.method, c.header, c.value, res.StatusCode, data, res.Header.Get("Content-Length"))
		}
	}
	// Taken back out of the draft before submission, it is deleted.
	req, _ = http.NewRequest(http.MethodPost, apptest.Str(sess.Body, "url")+"/files/"+q+"/remove", strings.NewReader(url.Values{"url": {fileURL[1]}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("HX-Request", "true")
	if res, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if code := served(t, fileURL[1]); res.StatusCode != http.StatusOK || code != http.StatusNotFound {
		t.Fatalf("removal: %d; the removed file then %d, want 404", res.StatusCode, code)
	}
	// Unknown ids and names are the API's 404.
	for _, p := range []string{strings.Replace(fileURL[1], "notes.txt", "other.txt", 1), e.Srv.URL + "/media/med_" + strings.Repeat("a", 32) + "/notes.txt"} {
		res, err := http.Get(p)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound || res.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %s", p, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
}

// TestMediaUploadAPI stores a file through POST /media with an API key.
func TestMediaUploadAPI(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	upload := func(key string, data []byte) *http.Response { return uploadMedia(e, key, "notes.txt", data) }
	res := upload(tn.Keys[tenancy.RoleStudent], []byte("leaves are green"))
	var out struct {
		URL  string
		Size int
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusOK || out.Size != 16 ||
		!strings.HasPrefix(out.URL, e.Srv.URL+"/media/med_") {
		t.Fatalf("upload: %d %+v %v", res.StatusCode, out, err)
	}
	if res := upload(tn.Keys[tenancy.RoleStudent], []byte("<html><script>x</script>")); res.StatusCode != http.StatusBadRequest {
		t.Errorf("HTML upload: %d", res.StatusCode)
	}
	if res := upload(tn.Keys[tenancy.RoleStudent], make([]byte, 11<<20)); res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("11 MiB upload: %d", res.StatusCode)
	}
	if res := upload("", []byte("x")); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous upload: %d", res.StatusCode)
	}
	// The route takes nothing but multipart: any other body is a 415 that
	// says so, not the 404 of a route that does not exist.
	for _, ct := range []string{"application/json", "multipart/form-data", "multipart/form-data; boundary=", "text/plain"} {
		req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+"/media", strings.NewReader(`{"file":"x"}`))
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Authorization", "Bearer "+tn.Keys[tenancy.RoleStudent])
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Message string }
		_ = json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if res.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(body.Message, "multipart/form-data") {
			t.Errorf("%q body: %d %q", ct, res.StatusCode, body.Message)
		}
	}
}

// uploadMedia posts data as the file name to POST /media with key.
func uploadMedia(e *env, key, name string, data []byte) *http.Response {
	e.T.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, _ := mw.CreateFormFile("file", name)
	_, _ = part.Write(data)
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+"/media", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(func() { res.Body.Close() })
	return res
}

// uploadedURL uploads text as notes.txt with key and returns its URL.
func uploadedURL(e *env, key, text string) string {
	e.T.Helper()
	var out struct{ URL string }
	if err := json.NewDecoder(uploadMedia(e, key, "notes.txt", []byte(text)).Body).Decode(&out); err != nil || out.URL == "" {
		e.T.Fatalf("upload: %+v %v", out, err)
	}
	return out.URL
}

// submitFiles submits, with key, user's result of exam answering its
// question q with files, and returns the result's id.
func submitFiles(e *env, key, exam, q, user string, files ...string) string {
	e.T.Helper()
	return apptest.Str(e.Do("POST", "/exams/"+exam+"/results", key, map[string]any{"userId": user,
		"answers": []map[string]any{{"questionId": q, "files": files}}}).Must(e.T, http.StatusOK).Body, "id")
}

// served is the status of an unauthenticated GET of url.
func served(t *testing.T, url string) int {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestAnswerFilesGoWithTheirAnswers: deleting a student deletes the files
// their answers referenced, but one that another student's answer still
// references; deleting the exam then deletes that one too.
func TestAnswerFilesGoWithTheirAnswers(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	teacher := tn.Keys[tenancy.RoleTeacher]
	exam, q := fileUploadExam(e, teacher)
	own, shared := uploadedURL(e, teacher, "only mine"), uploadedURL(e, teacher, "ours")
	other := apptest.Str(e.Do("POST", "/users", tn.Keys[tenancy.RoleAdmin], map[string]any{"email": "other@example.com", "name": "Other",
		"role": "student"}).Must(t, http.StatusOK).Body, "id")
	for _, s := range []struct {
		user  string
		files []string
	}{{tn.Users[tenancy.RoleStudent].ID, []string{own, shared, "https://cdn.example.com/leaf.png"}}, {other, []string{shared}}} {
		submitFiles(e, teacher, exam, q, s.user, s.files...)
	}
	e.Do("DELETE", "/users/"+tn.Users[tenancy.RoleStudent].ID, tn.Keys[tenancy.RoleAdmin], nil).Must(t, http.StatusOK)
	if own, shared := served(t, own), served(t, shared); own != http.StatusNotFound || shared != http.StatusOK {
		t.Fatalf("after deleting the student: their own file %d, the shared one %d; want 404 and 200", own, shared)
	}
	e.Do("DELETE", "/exams/"+exam, teacher, nil).Must(t, http.StatusOK)
	if code := served(t, shared); code != http.StatusNotFound {
		t.Fatalf("after deleting the exam: the shared file %d, want 404", code)
	}
}

// fileUploadExam creates, with key, an exam of one file_upload question.
func fileUploadExam(e *env, key string) (examID, questionID string) {
	e.T.Helper()
	examID = apptest.Str(e.Do("POST", "/exams", key, map[string]any{"name": "Leaves", "language": "en"}).Must(e.T, http.StatusOK).Body, "id")
	questionID = apptest.Str(e.Do("POST", "/exams/"+examID+"/questions", key, map[string]any{"type": "file_upload", "prompt": "Notes?", "points": 1,
		"config": map[string]any{"rubric": "notes"}}).Must(e.T, http.StatusOK).Body, "id")
	return examID, questionID
}

// TestUnattachedUploadsAreSwept: an upload that no answer names is deleted
// once it is older than media.UnattachedRetention, and one that an answer
// names stays, whatever other URLs the answer lists. An answer of another
// organization naming the URL does not keep it.
func TestUnattachedUploadsAreSwept(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn, other := e.NewTenant("US", "pro"), e.NewTenant("DE", "pro")
	teacher := tn.Keys[tenancy.RoleTeacher]
	exam, q := fileUploadExam(e, teacher)
	submitted, abandoned := uploadedURL(e, teacher, "handed in"), uploadedURL(e, teacher, "never handed in")
	// Beside it, URLs that name no upload of assessd's attach nothing.
	submitFiles(e, teacher, exam, q, tn.Users[tenancy.RoleStudent].ID, submitted, "https://cdn.example.com/leaf.png",
		"https://cdn.example.com/media/med_x/y.png")
	otherExam, otherQ := fileUploadExam(e, other.Keys[tenancy.RoleTeacher])
	submitFiles(e, other.Keys[tenancy.RoleTeacher], otherExam, otherQ, other.Users[tenancy.RoleStudent].ID, abandoned)
	for _, c := range []struct {
		later                time.Duration
		submitted, abandoned int
	}{
		{media.UnattachedRetention - time.Hour, http.StatusOK, http.StatusOK},
		{media.UnattachedRetention + time.Hour, http.StatusOK, http.StatusNotFound},
	} {
		if err := e.App.Media.SweepUnattached(context.Background(), time.Now().Add(c.later)); err != nil {
			t.Fatal(err)
		}
		if s, a := served(t, submitted), served(t, abandoned); s != c.submitted || a != c.abandoned {
			t.Fatalf("%v after upload: the submitted file %d, the abandoned one %d; want %d and %d", c.later, s, a, c.submitted, c.abandoned)
		}
	}
}

// TestUploadsNamedBeforeTheSweepStay: migration 028 attaches the files
// that answers stored before it name, so the first sweep leaves them. The
// data is written as the schema of migration 027 held it, by SQL: today's
// code needs today's schema.
func TestUploadsNamedBeforeTheSweepStay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewEmptyURL(t)
	if err := store.MigrateTo(ctx, url, 27); err != nil {
		t.Fatal(err)
	}
	owner, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Close(ctx) })
	org, teacher, student := ids.New(ids.Org), ids.New(ids.User), ids.New(ids.User)
	exam, question, result := ids.New(ids.Exam), ids.New(ids.Question), ids.New(ids.Result)
	fileID := func(text string) string { return "med_" + strings.Repeat(text[:1], 32) }
	named, unnamed := fileID("named"), fileID("unnamed")
	for _, stmt := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO orgs (id, name, country, plan, ai_region) VALUES ($1, 'School', 'US', 'pro', 'global')`, []any{org}},
		{`INSERT INTO users (id, org_id, email, name, role) VALUES ($1, $3, 't@school.test', 'T', 'teacher'), ($2, $3, 's@school.test', 'S', 'student')`,
			[]any{teacher, student, org}},
		{`INSERT INTO exams (id, org_id, name, language) VALUES ($1, $2, 'Uploads', 'en')`, []any{exam, org}},
		{`INSERT INTO questions (id, org_id, exam_id, position, builtin_type, prompt, points) VALUES ($1, $2, $3, 1, 'file_upload', 'Upload.', 1)`,
			[]any{question, org, exam}},
		{`INSERT INTO media_files (id, org_id, name, content_type, content, uploaded_by)
		  VALUES ($1, $3, 'notes.txt', 'text/plain; charset=utf-8', 'named', $4), ($2, $3, 'notes.txt', 'text/plain; charset=utf-8', 'unnamed', $4)`,
			[]any{named, unnamed, org, teacher}},
		{`INSERT INTO results (id, org_id, exam_id, user_id, status, max_score, region) VALUES ($1, $2, $3, $4, 'grading', 1, 'global')`,
			[]any{result, org, exam, student}},
		{`INSERT INTO result_answers (result_id, question_id, org_id, exam_id, position, files, status, max_score)
		  VALUES ($1, $2, $3, $4, 1, $5::jsonb, 'pending', 1)`,
			[]any{result, question, org, exam, `["https://assessd.example/media/` + named + `/notes.txt"]`}},
	} {
		if _, err := owner.Exec(ctx, stmt.sql, stmt.args...); err != nil {
			t.Fatalf("%s: %v", stmt.sql, err)
		}
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	e := apptest.NewAt(t, url)
	if err := e.App.Media.SweepUnattached(ctx, time.Now().Add(media.UnattachedRetention+time.Hour)); err != nil {
		t.Fatal(err)
	}
	n := served(t, e.Srv.URL+"/media/"+named+"/notes.txt")
	u := served(t, e.Srv.URL+"/media/"+unnamed+"/notes.txt")
	if n != http.StatusOK || u != http.StatusNotFound {
		t.Fatalf("after the migration's first sweep: the named file %d, the unnamed one %d; want 200 and 404", n, u)
	}
}

// TestAnswerFilesAreFoundByKey: storing or deleting an answer that names
// an uploaded file reads that file's row alone, however many files its
// organization has (migrations 028 and 029); the first versions of the
// triggers read all 1,000 of them. The counts are the transaction's own
// (pg_stat_xact_user_tables), so nothing else running interferes.
func TestAnswerFilesAreFoundByKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewURL(t)
	e := apptest.NewAt(t, url)
	tn := e.NewTenant("US", "pro")
	teacher := tn.Keys[tenancy.RoleTeacher]
	exam, q := fileUploadExam(e, teacher)
	file := uploadedURL(e, teacher, "mine")
	result := submitFiles(e, teacher, exam, q, tn.Users[tenancy.RoleStudent].ID, file)
	fileID := regexp.MustCompile(`/media/(med_[a-z0-9]+)/`).FindStringSubmatch(file)[1]

	owner, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Close(ctx) })
	tx, err := owner.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO media_files (id, org_id, name, content_type, content, uploaded_by)
		SELECT 'med_' || md5(i::text), $1, 'other.txt', 'text/plain', 'x', 'usr_x' FROM generate_series(1, 1000) i`, tn.Org.ID)
	rowsRead := func() (n int64) {
		t.Helper()
		if err := tx.QueryRow(ctx, `SELECT seq_tup_read + coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables
			WHERE relid = 'media_files'::regclass`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := rowsRead()
	exec(`CREATE TEMP TABLE deleted ON COMMIT DROP AS
		WITH d AS (DELETE FROM result_answers WHERE result_id = $1 RETURNING *) SELECT * FROM d`, result)
	if n := rowsRead() - before; n > 1 {
		t.Errorf("deleting the answer read %d rows of media_files, want its file's alone", n)
	}
	// The deletion took the file; it is back, unattached, for the insert.
	exec(`INSERT INTO media_files (id, org_id, name, content_type, content, uploaded_by) VALUES ($1, $2, 'notes.txt', 'text/plain', 'x', 'usr_x')`,
		fileID, tn.Org.ID)
	before = rowsRead()
	exec(`INSERT INTO result_answers SELECT * FROM deleted`)
	if n := rowsRead() - before; n > 1 {
		t.Errorf("storing the answer read %d rows of media_files, want its file's alone", n)
	}
	var attached bool
	if err := tx.QueryRow(ctx, `SELECT attached FROM media_files WHERE id = $1`, fileID).Scan(&attached); err != nil || !attached {
		t.Fatalf("the stored answer's file: attached %v, %v", attached, err)
	}
}

// TestPendingUploadsBoundAnswers409: POST /media past the uploader's bound
// of files no answer names is a 409 PENDING_UPLOADS_FULL in the API's
// error shape.
func TestPendingUploadsBoundAnswers409(t *testing.T) {
	t.Parallel()
	e := apptest.NewWithConfig(t, func(c *app.Config) { c.MediaMaxUploadBytes = 64 })
	student := e.NewTenant("US", "pro").Keys[tenancy.RoleStudent]
	for range media.PendingUploads {
		uploadedURL(e, student, strings.Repeat("a", 64))
	}
	res := uploadMedia(e, student, "notes.txt", []byte("one more"))
	var body struct {
		Message string
		Details []struct{ Reason string }
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusConflict ||
		len(body.Details) == 0 || body.Details[0].Reason != media.ReasonPendingFull || !strings.Contains(body.Message, "3 KiB") {
		t.Fatalf("upload past the bound: %d %+v %v", res.StatusCode, body, err)
	}
}
