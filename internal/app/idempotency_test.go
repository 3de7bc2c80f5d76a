package app_test

import (
	"context"
	"image"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/app"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// TestIdempotencyKeys: a submission resent with its Idempotency-Key is
// answered the first response and records no second result; the key is
// the caller's own, bound to its request and body, freed by a refusal,
// busy while its request runs, never run again once it wrote, and
// forgotten after 24 hours.
func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	url := storetest.NewURL(t)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	e := newEnvOn(t, db, func(c *app.Config) { c.Now = clock })
	school, other := e.newTenant("US", "pro"), e.newTenant("DE", "pro")
	teacher := school.keys[tenancy.RoleTeacher]
	exam := str(e.do("POST", "/exams", teacher, map[string]any{"name": "Sums", "language": "en"}).must(t, http.StatusOK).body, "id")
	question := str(e.do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{
		"type": "numeric", "prompt": "1+1?", "config": map[string]any{"correct": 2}}).must(t, http.StatusOK).body, "id")
	submission := map[string]any{"userId": school.users[tenancy.RoleStudent].ID, "answers": []any{map[string]any{"questionId": question, "value": 2}}}
	submit := func(key, idemKey string, body any) response {
		t.Helper()
		return e.doWith("POST", "/exams/"+exam+"/results", key, body, http.Header{"Idempotency-Key": {idemKey}})
	}
	results := func() int {
		t.Helper()
		return len(items(e.do("GET", "/exams/"+exam+"/results", teacher, nil).must(t, http.StatusOK).body, "results"))
	}

	first := submit(teacher, "submit-1", submission).must(t, http.StatusOK)
	again := submit(teacher, "submit-1", submission).must(t, http.StatusOK)
	if string(again.raw) != string(first.raw) || again.header.Get("Idempotent-Replayed") != "true" || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the retry answered %s (replayed %q), want the first answer %s", again.raw, again.header.Get("Idempotent-Replayed"), first.raw)
	}
	if n := results(); n != 1 {
		t.Fatalf("%d results after a submission and its retry, want 1", n)
	}

	// The key is bound to its request: another body or path is refused.
	changed := map[string]any{"userId": school.users[tenancy.RoleStudent].ID, "answers": []any{map[string]any{"questionId": question, "value": 3}}}
	if r := submit(teacher, "submit-1", changed).must(t, http.StatusUnprocessableEntity); r.reason() != "IDEMPOTENCY_KEY_REUSED" || r.field() != "Idempotency-Key" {
		t.Fatalf("the key with another body: %s", r.raw)
	}
	if r := e.doWith("POST", "/exams", teacher, map[string]any{"name": "Other", "language": "en"}, http.Header{"Idempotency-Key": {"submit-1"}}); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("the key on another path: %d %s", r.status, r.raw)
	}
	// It is the caller's own: another user, or another organization's,
	// runs its own request with the same key.
	submit(school.keys[tenancy.RoleAdmin], "submit-1", submission).must(t, http.StatusOK)
	otherExam := str(e.do("POST", "/exams", other.keys[tenancy.RoleTeacher], map[string]any{"name": "Sums", "language": "en"}).must(t, http.StatusOK).body, "id")
	if r := e.doWith("POST", "/exams/"+otherExam+"/results", other.keys[tenancy.RoleTeacher], map[string]any{"userId": other.users[tenancy.RoleStudent].ID, "answers": []any{}},
		http.Header{"Idempotency-Key": {"submit-1"}}); r.status != http.StatusOK || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("another organization's request with the same key: %d %s", r.status, r.raw)
	}
	if n := results(); n != 2 {
		t.Fatalf("%d results, want 2: the admin's submission runs", n)
	}

	// A refusal wrote nothing and frees the key for the corrected request.
	bad := map[string]any{"userId": "usr_01JD3M4Q9ZB8K1T7W2X5C6V0NA", "answers": []any{}}
	submit(teacher, "submit-2", bad).must(t, http.StatusBadRequest)
	submit(teacher, "submit-2", submission).must(t, http.StatusOK)
	if n := results(); n != 3 {
		t.Fatalf("%d results, want 3", n)
	}

	// While the first request runs, a retry is told to wait, and never
	// runs beside it.
	holder, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(context.Background())
	tx, err := holder.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), `SELECT 1 FROM exams WHERE id = $1 FOR UPDATE`, exam); err != nil {
		t.Fatal(err)
	}
	running := make(chan response, 1)
	go func() { running <- submit(teacher, "submit-3", submission) }()
	for reserved, deadline := 0, time.Now().Add(10*time.Second); reserved == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first request never took its key")
		}
		if err := holder.QueryRow(context.Background(), `SELECT count(*) FROM idempotency_keys WHERE key = 'submit-3'`).Scan(&reserved); err != nil {
			t.Fatal(err)
		}
	}
	busy := submit(teacher, "submit-3", submission)
	if busy.status != http.StatusConflict || busy.reason() != "IDEMPOTENCY_KEY_IN_USE" || busy.header.Get("Retry-After") == "" {
		t.Fatalf("a retry while the request runs: %d %s", busy.status, busy.raw)
	}
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	firstRun := (<-running).must(t, http.StatusOK)
	if r := submit(teacher, "submit-3", submission).must(t, http.StatusOK); string(r.raw) != string(firstRun.raw) {
		t.Fatalf("the retry after the run answered %s, want %s", r.raw, firstRun.raw)
	}
	if n := results(); n != 4 {
		t.Fatalf("%d results, want 4", n)
	}

	// A submission notes on its key, in the transaction that records the
	// result, that it wrote. A process that died before it kept the answer
	// leaves the key reserved, its lease run out, and unanswered: its
	// retry is told so, and records no second result.
	submit(teacher, "submit-4", submission).must(t, http.StatusOK)
	var wrote bool
	if err := holder.QueryRow(context.Background(), `
		UPDATE idempotency_keys SET status = NULL, response = NULL, body_sha256 = NULL, created_at = $1
		 WHERE key = 'submit-4' RETURNING wrote`, clock().Add(-3*time.Minute)).Scan(&wrote); err != nil || !wrote {
		t.Fatalf("the submission's key: wrote %v, %v; want it noted", wrote, err)
	}
	if r := submit(teacher, "submit-4", submission); r.status != http.StatusConflict || r.reason() != "IDEMPOTENCY_KEY_UNANSWERED" || r.header.Get("Retry-After") != "" {
		t.Fatalf("the retry of a submission whose process died after it wrote: %d %s", r.status, r.raw)
	}
	if n := results(); n != 5 {
		t.Fatalf("%d results, want 5", n)
	}

	// Keys are remembered for 24 hours.
	mu.Lock()
	now = now.Add(25 * time.Hour)
	mu.Unlock()
	if r := submit(teacher, "submit-1", submission).must(t, http.StatusOK); r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("a key older than 24 hours replayed %s", r.raw)
	}

	for _, key := range []string{strings.Repeat("k", 256), "caf\u00e9", "tab\tkey"} {
		if r := submit(teacher, key, submission).must(t, http.StatusBadRequest); r.field() != "Idempotency-Key" {
			t.Errorf("key %q: %s", key, r.raw)
		}
	}
	// Operators see the keys' outcomes per organization.
	for outcome, want := range map[string]int{"run": 7, "replayed": 2, "in_use": 1, "reused": 2, "unanswered": 1, "invalid": 3} {
		prefix := `assessd_idempotency_keys_total{org="` + school.org.ID + `",outcome="` + outcome + `"} `
		if line := e.metricLine(prefix); line != prefix+strconv.Itoa(want) {
			t.Errorf("metric %q, want %d", line, want)
		}
	}
}

// TestIdempotencyKeysOnAStreamedImport: the import, whose body the
// handler streams, is run once per key as the JSON API is.
func TestIdempotencyKeysOnAStreamedImport(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	school := e.newTenant("US", "pro")
	teacher := school.keys[tenancy.RoleTeacher]
	exam := str(e.do("POST", "/exams", teacher, map[string]any{"name": "Imported", "language": "en"}).must(t, http.StatusOK).body, "id")
	doc := string(e.do("GET", "/exams/"+exam+"/export?format=json", teacher, nil).must(t, http.StatusOK).raw)
	send := func(body string) response {
		return e.doWith("POST", "/exam-imports", teacher, body, http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {"import-1"}})
	}
	first := send(doc).must(t, http.StatusOK)
	again := send(doc).must(t, http.StatusOK)
	if str(again.body, "examId") != str(first.body, "examId") || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the import's retry answered %s, want %s replayed", again.raw, first.raw)
	}
	if r := send(strings.Replace(doc, "Imported", "Changed", 1)); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("the key with another document: %d %s", r.status, r.raw)
	}
	if n := len(items(e.do("GET", "/exams", teacher, nil).must(t, http.StatusOK).body, "exams")); n != 2 {
		t.Fatalf("%d exams after an exam's import and its retry, want 2", n)
	}
}

// TestIdempotencyKeysOnAFormSentAgain: a scan upload sent again builds its
// multipart form anew, with another boundary, and is still the same
// request: one scan, the first answer replayed.
func TestIdempotencyKeysOnAFormSentAgain(t *testing.T) {
	t.Parallel()
	e, tn, teacher, exam := newScanSchool(t)
	page := encodePNG(t, image.NewGray(image.Rect(0, 0, 620, 877)))
	keyed := func() http.Header { return http.Header{"Idempotency-Key": {"scan-1"}} }
	first := e.uploadWith(exam, teacher, keyed(), page).must(t, http.StatusOK)
	again := e.uploadWith(exam, teacher, keyed(), page).must(t, http.StatusOK)
	if string(again.raw) != string(first.raw) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the form sent again answered %s, want %s replayed", again.raw, first.raw)
	}
	other := encodePNG(t, image.NewGray(image.Rect(0, 0, 621, 877)))
	if r := e.uploadWith(exam, teacher, keyed(), other); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("another file with the key: %d %s", r.status, r.raw)
	}
	ctx := store.WithOrg(context.Background(), tn.org.ID)
	var scans int
	if err := e.db.Q(ctx).QueryRow(ctx, `SELECT count(*) FROM answer_sheet_scans WHERE exam_id = $1`, exam).Scan(&scans); err != nil || scans != 1 {
		t.Fatalf("%d scans (%v), want 1", scans, err)
	}
}
