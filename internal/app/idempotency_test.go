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
	"github.com/assessd/assessd/internal/testkit/apptest"
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
	e := apptest.NewOn(t, db, func(c *app.Config) { c.Now = clock })
	school, other := e.NewTenant("US", "pro"), e.NewTenant("DE", "pro")
	teacher := school.Keys[tenancy.RoleTeacher]
	exam := apptest.Str(e.Do("POST", "/exams", teacher, map[string]any{"name": "Sums", "language": "en"}).Must(t, http.StatusOK).Body, "id")
	question := apptest.Str(e.Do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{
		"type": "numeric", "prompt": "1+1?", "config": map[string]any{"correct": 2}}).Must(t, http.StatusOK).Body, "id")
	submission := map[string]any{"userId": school.Users[tenancy.RoleStudent].ID, "answers": []any{map[string]any{"questionId": question, "value": 2}}}
	submit := func(key, idemKey string, body any) response {
		t.Helper()
		return e.DoWith("POST", "/exams/"+exam+"/results", key, body, http.Header{"Idempotency-Key": {idemKey}})
	}
	results := func() int {
		t.Helper()
		return len(apptest.Items(e.Do("GET", "/exams/"+exam+"/results", teacher, nil).Must(t, http.StatusOK).Body, "results"))
	}

	first := submit(teacher, "submit-1", submission).Must(t, http.StatusOK)
	again := submit(teacher, "submit-1", submission).Must(t, http.StatusOK)
	if string(again.Raw) != string(first.Raw) || again.Header.Get("Idempotent-Replayed") != "true" || first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the retry answered %s (replayed %q), want the first answer %s", again.Raw, again.Header.Get("Idempotent-Replayed"), first.Raw)
	}
	if n := results(); n != 1 {
		t.Fatalf("%d results after a submission and its retry, want 1", n)
	}

	// The key is bound to its request: another body or path is refused.
	changed := map[string]any{"userId": school.Users[tenancy.RoleStudent].ID, "answers": []any{map[string]any{"questionId": question, "value": 3}}}
	if r := submit(teacher, "submit-1", changed).Must(t, http.StatusUnprocessableEntity); r.Reason() != "IDEMPOTENCY_KEY_REUSED" || r.Field() != "Idempotency-Key" {
		t.Fatalf("the key with another body: %s", r.Raw)
	}
	if r := e.DoWith("POST", "/exams", teacher, map[string]any{"name": "Other", "language": "en"}, http.Header{"Idempotency-Key": {"submit-1"}}); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("the key on another path: %d %s", r.Status, r.Raw)
	}
	// It is the caller's own: another user, or another organization's,
	// runs its own request with the same key.
	submit(school.Keys[tenancy.RoleAdmin], "submit-1", submission).Must(t, http.StatusOK)
	otherExam := apptest.Str(e.Do("POST", "/exams", other.Keys[tenancy.RoleTeacher], map[string]any{"name": "Sums", "language": "en"}).Must(t, http.StatusOK).Body, "id")
	if r := e.DoWith("POST", "/exams/"+otherExam+"/results", other.Keys[tenancy.RoleTeacher], map[string]any{"userId": other.Users[tenancy.RoleStudent].ID, "answers": []any{}},
		http.Header{"Idempotency-Key": {"submit-1"}}); r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("another organization's request with the same key: %d %s", r.Status, r.Raw)
	}
	if n := results(); n != 2 {
		t.Fatalf("%d results, want 2: the admin's submission runs", n)
	}

	// A refusal wrote nothing and frees the key for the corrected request.
	bad := map[string]any{"userId": "usr_01JD3M4Q9ZB8K1T7W2X5C6V0NA", "answers": []any{}}
	submit(teacher, "submit-2", bad).Must(t, http.StatusBadRequest)
	submit(teacher, "submit-2", submission).Must(t, http.StatusOK)
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
	if busy.Status != http.StatusConflict || busy.Reason() != "IDEMPOTENCY_KEY_IN_USE" || busy.Header.Get("Retry-After") == "" {
		t.Fatalf("a retry while the request runs: %d %s", busy.Status, busy.Raw)
	}
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	firstRun := (<-running).Must(t, http.StatusOK)
	if r := submit(teacher, "submit-3", submission).Must(t, http.StatusOK); string(r.Raw) != string(firstRun.Raw) {
		t.Fatalf("the retry after the run answered %s, want %s", r.Raw, firstRun.Raw)
	}
	if n := results(); n != 4 {
		t.Fatalf("%d results, want 4", n)
	}

	// A submission notes on its key, in the transaction that records the
	// result, that it wrote. A process that died before it kept the answer
	// leaves the key reserved, its lease run out, and unanswered: its
	// retry is told so, and records no second result.
	submit(teacher, "submit-4", submission).Must(t, http.StatusOK)
	var wrote bool
	if err := holder.QueryRow(context.Background(), `
		UPDATE idempotency_keys SET status = NULL, response = NULL, body_sha256 = NULL, created_at = $1
		 WHERE key = 'submit-4' RETURNING wrote`, clock().Add(-3*time.Minute)).Scan(&wrote); err != nil || !wrote {
		t.Fatalf("the submission's key: wrote %v, %v; want it noted", wrote, err)
	}
	if r := submit(teacher, "submit-4", submission); r.Status != http.StatusConflict || r.Reason() != "IDEMPOTENCY_KEY_UNANSWERED" || r.Header.Get("Retry-After") != "" {
		t.Fatalf("the retry of a submission whose process died after it wrote: %d %s", r.Status, r.Raw)
	}
	if n := results(); n != 5 {
		t.Fatalf("%d results, want 5", n)
	}

	// Keys are remembered for 24 hours.
	mu.Lock()
	now = now.Add(25 * time.Hour)
	mu.Unlock()
	if r := submit(teacher, "submit-1", submission).Must(t, http.StatusOK); r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("a key older than 24 hours replayed %s", r.Raw)
	}

	for _, key := range []string{strings.Repeat("k", 256), "caf\u00e9", "tab\tkey"} {
		if r := submit(teacher, key, submission).Must(t, http.StatusBadRequest); r.Field() != "Idempotency-Key" {
			t.Errorf("key %q: %s", key, r.Raw)
		}
	}
	// Operators see the keys' outcomes per organization.
	for outcome, want := range map[string]int{"run": 7, "replayed": 2, "in_use": 1, "reused": 2, "unanswered": 1, "invalid": 3} {
		prefix := `assessd_idempotency_keys_total{org="` + school.Org.ID + `",outcome="` + outcome + `"} `
		if line := metricLine(e, prefix); line != prefix+strconv.Itoa(want) {
			t.Errorf("metric %q, want %d", line, want)
		}
	}
}

// TestIdempotencyKeysOnAStreamedImport: the import, whose body the
// handler streams, is run once per key as the JSON API is.
func TestIdempotencyKeysOnAStreamedImport(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	school := e.NewTenant("US", "pro")
	teacher := school.Keys[tenancy.RoleTeacher]
	exam := apptest.Str(e.Do("POST", "/exams", teacher, map[string]any{"name": "Imported", "language": "en"}).Must(t, http.StatusOK).Body, "id")
	doc := string(e.Do("GET", "/exams/"+exam+"/export?format=json", teacher, nil).Must(t, http.StatusOK).Raw)
	send := func(body string) response {
		return e.DoWith("POST", "/exam-imports", teacher, body, http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {"import-1"}})
	}
	first := send(doc).Must(t, http.StatusOK)
	again := send(doc).Must(t, http.StatusOK)
	if apptest.Str(again.Body, "examId") != apptest.Str(first.Body, "examId") || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the import's retry answered %s, want %s replayed", again.Raw, first.Raw)
	}
	if r := send(strings.Replace(doc, "Imported", "Changed", 1)); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("the key with another document: %d %s", r.Status, r.Raw)
	}
	if n := len(apptest.Items(e.Do("GET", "/exams", teacher, nil).Must(t, http.StatusOK).Body, "exams")); n != 2 {
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
	first := uploadWith(e, exam, teacher, keyed(), page).Must(t, http.StatusOK)
	again := uploadWith(e, exam, teacher, keyed(), page).Must(t, http.StatusOK)
	if string(again.Raw) != string(first.Raw) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the form sent again answered %s, want %s replayed", again.Raw, first.Raw)
	}
	other := encodePNG(t, image.NewGray(image.Rect(0, 0, 621, 877)))
	if r := uploadWith(e, exam, teacher, keyed(), other); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("another file with the key: %d %s", r.Status, r.Raw)
	}
	ctx := store.WithOrg(context.Background(), tn.Org.ID)
	var scans int
	if err := e.DB.Q(ctx).QueryRow(ctx, `SELECT count(*) FROM answer_sheet_scans WHERE exam_id = $1`, exam).Scan(&scans); err != nil || scans != 1 {
		t.Fatalf("%d scans (%v), want 1", scans, err)
	}
}
