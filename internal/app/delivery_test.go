package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

// A teacher gives an exam to a student; the student takes it over the API
// with their own key: the questions come in the attempt's order without
// their answer key, each save is a revision (a resend with the same
// Idempotency-Key answered once), another student and another
// organization see nothing, and the submission makes one result, graded
// by the rules, that names its attempt. Then the staff's views: progress,
// attempts, accommodations, edits and deletion.
func TestStudentTakesAnAssignmentWithTheirOwnKey(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "enterprise")
	other := e.NewTenant("GB", "enterprise")
	teacher, student := tn.Keys[tenancy.RoleTeacher], tn.Keys[tenancy.RoleStudent]
	ctx := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.Org.ID))
	second, err := e.App.Tenancy.CreateUser(ctx, tenancy.NewUser{Email: "second@school.test", Name: "Second", Role: tenancy.RoleStudent})
	if err != nil {
		t.Fatal(err)
	}
	_, secondKey, err := e.App.Tenancy.CreateAPIKey(ctx, second.ID, "test")
	if err != nil {
		t.Fatal(err)
	}

	exam := apptest.Str(e.Do("POST", "/exams", teacher, map[string]any{"name": "Fractions", "language": "en", "durationMinutes": 45}).Must(t, 200).Body, "id")
	mc := apptest.Str(e.Do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{"type": "multiple_choice", "prompt": "Half?", "points": 2,
		"config": map[string]any{"options": []any{map[string]any{"id": "a", "text": "1/3"},
			map[string]any{"id": "b", "text": "1/2", "correct": true}, map[string]any{"id": "c", "text": "2/3"}}}}).Must(t, 200).Body, "id")
	num := apptest.Str(e.Do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{"type": "numeric", "prompt": "3/4?",
		"config": map[string]any{"correct": 0.75, "tolerance": 0.001}}).Must(t, 200).Body, "id")

	now := time.Now().UTC()
	asg := e.Do("POST", "/assignments", teacher, map[string]any{"examId": exam, "userIds": []string{tn.Users[tenancy.RoleStudent].ID, second.ID},
		"opensAt": now.Add(-time.Minute).Format(time.RFC3339), "closesAt": now.Add(2 * time.Hour).Format(time.RFC3339),
		"shuffleQuestions": true, "shuffleOptions": true}).Must(t, 200).Body
	id := apptest.Str(asg, "id")
	if asg["timeLimitMinutes"] != 45.0 || asg["maxAttempts"] != 1.0 || asg["graceSeconds"] != 30.0 || asg["overdue"] != "autosubmit" {
		t.Fatalf("assignment defaults: %v", asg)
	}
	// Bad input is a 400 naming the field; a student may not assign.
	for _, bad := range []map[string]any{
		{"examId": exam, "userIds": []string{second.ID}, "opensAt": now.Format(time.RFC3339), "closesAt": now.Add(-time.Hour).Format(time.RFC3339)},
		{"examId": exam, "opensAt": now.Format(time.RFC3339), "closesAt": now.Add(time.Hour).Format(time.RFC3339)},
		{"examId": exam, "userIds": []string{"usr_nope"}, "opensAt": now.Format(time.RFC3339), "closesAt": now.Add(time.Hour).Format(time.RFC3339)},
		{"examId": exam, "userIds": []string{other.Users[tenancy.RoleStudent].ID}, "opensAt": now.Format(time.RFC3339), "closesAt": now.Add(time.Hour).Format(time.RFC3339)},
		{"examId": exam, "userIds": []string{second.ID}, "opensAt": now.Format(time.RFC3339), "closesAt": now.Add(time.Hour).Format(time.RFC3339), "overdue": "later"},
		{"examId": exam, "userIds": []string{second.ID}, "opensAt": now.Format(time.RFC3339), "closesAt": now.Add(time.Hour).Format(time.RFC3339), "colour": "red"},
	} {
		e.Do("POST", "/assignments", teacher, bad).Must(t, 400)
	}
	e.Do("POST", "/assignments", student, map[string]any{"examId": exam}).Must(t, 403)

	// The student sees the assignment given to them, without progress.
	mine := e.Do("GET", "/assignments", student, nil).Must(t, 200).Body["assignments"].([]any)
	if len(mine) != 1 || mine[0].(map[string]any)["progress"] != nil {
		t.Fatalf("student's assignments: %v", mine)
	}
	e.Do("GET", "/assignments/"+id, other.Keys[tenancy.RoleOwner], nil).Must(t, 404)

	start := e.DoWith("POST", "/assignments/"+id+"/attempts", student, map[string]any{}, http.Header{"Idempotency-Key": {"start-1"}}).Must(t, 200)
	attempt := start.Body
	att := apptest.Str(attempt, "id")
	if strings.Contains(string(start.Raw), "correct") {
		t.Fatalf("the attempt shows an answer key: %s", start.Raw)
	}
	if qs := attempt["questions"].([]any); len(qs) != 2 || attempt["status"] != "in_progress" || attempt["serverTime"] == nil {
		t.Fatalf("attempt: %s", start.Raw)
	}
	// A second tab resumes the same attempt.
	if again := e.Do("POST", "/assignments/"+id+"/attempts", student, map[string]any{}).Must(t, 200); apptest.Str(again.Body, "id") != att {
		t.Fatalf("a second start made %s; want %s", apptest.Str(again.Body, "id"), att)
	}

	save := func(key, qid string, value any, want int, header http.Header) response {
		t.Helper()
		return e.DoWith("PUT", "/attempts/"+att+"/responses/"+qid, key, map[string]any{"value": value}, header).Must(t, want)
	}
	keyed := http.Header{"Idempotency-Key": {"save-1"}}
	if r := save(student, mc, "a", 200, keyed); r.Body["revision"] != 1.0 {
		t.Fatalf("first save: %s", r.Raw)
	}
	if r := save(student, mc, "a", 200, keyed); r.Body["revision"] != 1.0 || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("a resend of the save: %s %v", r.Raw, r.Header)
	}
	if r := save(student, mc, "b", 200, nil); r.Body["revision"] != 2.0 {
		t.Fatalf("second save: %s", r.Raw)
	}
	save(student, num, 0.75, 200, nil)
	if r := save(student, "qst_01JD3M4Q9ZB8K1T7W2X5C6V0ND", 1, 400, nil); r.Field() != "questionId" {
		t.Errorf("a question not in the attempt: %s", r.Raw)
	}
	e.Do("PUT", "/attempts/"+att+"/responses/"+mc, student, `{"value":"a","extra":1}`).Must(t, 400)
	e.Do("PUT", "/attempts/"+att+"/responses/"+mc, student, map[string]any{"value": strings.Repeat("x", 70<<10)}).Must(t, 400)
	e.Do("PUT", "/attempts/"+att+"/responses/"+mc, student, map[string]any{"value": "a", "files": []string{"ftp://x"}}).Must(t, 400)
	e.Do("PUT", "/attempts/not-an-id/responses/"+mc, student, map[string]any{"value": "a"}).Must(t, 400)
	if r := e.Do("PUT", "/attempts/"+att+"/responses/"+mc, student, map[string]any{"value": "c", "expectedRevision": 1}).Must(t, 409); r.Reason() != "RESPONSE_CHANGED" {
		t.Errorf("a stale expected revision: %s", r.Raw)
	}
	// Another student, and another organization, find nothing.
	e.Do("GET", "/attempts/"+att, secondKey, nil).Must(t, 404)
	save(secondKey, mc, "c", 404, nil)
	e.Do("POST", "/attempts/"+att+"/submit", secondKey, map[string]any{}).Must(t, 404)
	e.Do("GET", "/attempts/"+att, other.Keys[tenancy.RoleOwner], nil).Must(t, 404)
	e.Do("GET", "/assignments/"+id+"/attempts", other.Keys[tenancy.RoleOwner], nil).Must(t, 404)
	// Students see no one's progress, attempts or accommodations.
	e.Do("GET", "/assignments/"+id+"/attempts", student, nil).Must(t, 403)
	e.Do("GET", "/assignments/"+id+"/accommodations", student, nil).Must(t, 403)

	read := e.Do("GET", "/attempts/"+att, student, nil).Must(t, 200).Body
	if rs := read["responses"].([]any); len(rs) != 2 {
		t.Fatalf("responses: %v", rs)
	}
	done := e.Do("POST", "/attempts/"+att+"/submit", student, map[string]any{}).Must(t, 200).Body
	resultID := apptest.Str(done, "resultId")
	if done["status"] != "submitted" || done["submittedBy"] != "student" || resultID == "" {
		t.Fatalf("submitted: %v", done)
	}
	if again := e.Do("POST", "/attempts/"+att+"/submit", student, map[string]any{}).Must(t, 200).Body; apptest.Str(again, "resultId") != resultID {
		t.Fatalf("a second submission made %s; want %s", apptest.Str(again, "resultId"), resultID)
	}
	res := e.Do("GET", "/results/"+resultID, student, nil).Must(t, 200).Body
	if res["score"] != 3.0 || res["source"] != "attempt" || res["attemptId"] != att || res["assignmentId"] != id {
		t.Errorf("result: %v", res)
	}
	if r := save(student, mc, "a", 409, nil); r.Reason() != "ATTEMPT_CLOSED" {
		t.Errorf("a save after submission: %s", r.Raw)
	}
	if r := e.Do("POST", "/assignments/"+id+"/attempts", student, map[string]any{}).Must(t, 409); r.Reason() != "ATTEMPTS_EXHAUSTED" {
		t.Errorf("a second attempt: %s", r.Raw)
	}

	// Staff: progress, attempts, an accommodation, an edit, deletion.
	progress := e.Do("GET", "/assignments/"+id, teacher, nil).Must(t, 200).Body["progress"].(map[string]any)
	if progress["assigned"] != 2.0 || progress["submitted"] != 1.0 || progress["notStarted"] != 1.0 {
		t.Errorf("progress: %v", progress)
	}
	if list := e.Do("GET", "/assignments/"+id+"/attempts?status=submitted", teacher, nil).Must(t, 200).Body["attempts"].([]any); len(list) != 1 {
		t.Errorf("attempts: %v", list)
	}
	e.Do("GET", "/assignments/"+id+"/attempts?status=lost", teacher, nil).Must(t, 400)
	e.Do("PUT", "/assignments/"+id+"/accommodations/"+second.ID, teacher, map[string]any{"extraTimePercent": 25, "maxAttempts": 2}).Must(t, 200)
	e.Do("PUT", "/assignments/"+id+"/accommodations/"+other.Users[tenancy.RoleStudent].ID, teacher, map[string]any{"extraTimePercent": 25}).Must(t, 404)
	e.Do("PUT", "/assignments/"+id+"/accommodations/"+second.ID, teacher, map[string]any{"extraTimePercent": -1}).Must(t, 400)
	late := e.Do("POST", "/assignments/"+id+"/attempts", secondKey, map[string]any{}).Must(t, 200).Body
	if d, _ := time.Parse(time.RFC3339Nano, apptest.Str(late, "deadline")); d.Sub(mustTime(t, apptest.Str(late, "startedAt"))) != 45*time.Minute*5/4 {
		t.Errorf("deadline with 25%% extra time: %v from %v", apptest.Str(late, "deadline"), apptest.Str(late, "startedAt"))
	}
	if accs := e.Do("GET", "/assignments/"+id+"/accommodations", teacher, nil).Must(t, 200).Body["accommodations"].([]any); len(accs) != 1 {
		t.Errorf("accommodations: %v", accs)
	}
	patched := e.Do("PATCH", "/assignments/"+id, teacher, map[string]any{"userIds": []string{second.ID}, "showResults": "never"}).Must(t, 200).Body
	if ids := patched["userIds"].([]any); len(ids) != 1 || patched["showResults"] != "never" {
		t.Errorf("patched: %v", patched)
	}
	e.Do("PATCH", "/assignments/"+id, teacher, map[string]any{"userIds": []any{1}}).Must(t, 400)
	e.Do("DELETE", "/assignments/"+id+"/accommodations/"+second.ID, teacher, nil).Must(t, 200)
	e.Do("DELETE", "/assignments/"+id+"/accommodations/"+second.ID, teacher, nil).Must(t, 404)
	e.Do("DELETE", "/assignments/"+id, other.Keys[tenancy.RoleOwner], nil).Must(t, 404)
	e.Do("DELETE", "/assignments/"+id, teacher, nil).Must(t, 200)
	e.Do("GET", "/attempts/"+att, teacher, nil).Must(t, 404)
	// The result stays, without its attempt.
	if res := e.Do("GET", "/results/"+resultID, teacher, nil).Must(t, 200).Body; res["attemptId"] != "" || res["source"] != "attempt" {
		t.Errorf("result after the assignment's deletion: %v", res)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
