package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

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
	e := newEnv(t)
	tn := e.newTenant("US", "enterprise")
	other := e.newTenant("GB", "enterprise")
	teacher, student := tn.keys[tenancy.RoleTeacher], tn.keys[tenancy.RoleStudent]
	ctx := tenancy.WithCaller(context.Background(), tenancy.SystemCaller(tn.org.ID))
	second, err := e.app.Tenancy.CreateUser(ctx, tenancy.NewUser{Email: "second@school.test", Name: "Second", Role: tenancy.RoleStudent})
	if err != nil {
		t.Fatal(err)
	}
	_, secondKey, err := e.app.Tenancy.CreateAPIKey(ctx, second.ID, "test")
	if err != nil {
		t.Fatal(err)
	}

	exam := str(e.do("POST", "/exams", teacher, map[string]any{"name": "Fractions", "language": "en", "durationMinutes": 45}).must(t, 200).body, "id")
	mc := str(e.do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{"type": "multiple_choice", "prompt": "Half?", "points": 2,
		"config": map[string]any{"options": []any{map[string]any{"id": "a", "text": "1/3"},
			map[string]any{"id": "b", "text": "1/2", "correct": true}, map[string]any{"id": "c", "text": "2/3"}}}}).must(t, 200).body, "id")
	num := str(e.do("POST", "/exams/"+exam+"/questions", teacher, map[string]any{"type": "numeric", "prompt": "3/4?",
		"config": map[string]any{"correct": 0.75, "tolerance": 0.001}}).must(t, 200).body, "id")

	now := time.Now().UTC()
	asg := e.do("POST", "/assignments", teacher, map[string]any{"examId": exam, "userIds": []string{tn.users[tenancy.RoleStudent].ID, second.ID},
		"opensAt": now.Add(-time.Minute).Format(time.RFC3339), "closesAt": now.Add(2 * time.Hour).Format(time.RFC3339),
		"shuffleQuestions": true, "shuffleOptions": true}).must(t, 200).body
	id := str(asg, "id")
	if asg["timeLimitMinutes"] != 45.0 || asg["maxAttempts"] != 1.0 || asg["graceSeconds"] != 30.0 || asg["overdue"] != "autosubmit" {
		t.Fatalf("assignment defaults: %v", asg)
	}
	// Bad input is a 400 naming the field; a student may not assign.
	for _, bad := range []map[string]any{
		{"examId": exam, "userIds": []string{second.ID}, "opensAt": now.Format(time.RFC3339), "closesAt": now.Add(-time.Hour).Format(time.RFC3339)},
		{"examId": exam, "opensAt": now.Format(time.RFC3339), "closesAt": now.Add(time.Hour).Format(time.RFC3339)},
		{"examId": exam, "userIds": []string{"usr_nope"}, "opensAt": now.Format(time.RFC3339), "closesAt": now.Add(time.Hour).Format(time.RFC3339)},
		{"examId": exam, "userIds": []string{other.users[tenancy.RoleStudent].ID}, "opensAt": now.Format(time.RFC3339), "closesAt": now.Add(time.Hour).Format(time.RFC3339)},
		{"examId": exam, "userIds": []string{second.ID}, "opensAt": now.Format(time.RFC3339), "closesAt": now.Add(time.Hour).Format(time.RFC3339), "overdue": "later"},
		{"examId": exam, "userIds": []string{second.ID}, "opensAt": now.Format(time.RFC3339), "closesAt": now.Add(time.Hour).Format(time.RFC3339), "colour": "red"},
	} {
		e.do("POST", "/assignments", teacher, bad).must(t, 400)
	}
	e.do("POST", "/assignments", student, map[string]any{"examId": exam}).must(t, 403)

	// The student sees the assignment given to them, without progress.
	mine := e.do("GET", "/assignments", student, nil).must(t, 200).body["assignments"].([]any)
	if len(mine) != 1 || mine[0].(map[string]any)["progress"] != nil {
		t.Fatalf("student's assignments: %v", mine)
	}
	e.do("GET", "/assignments/"+id, other.keys[tenancy.RoleOwner], nil).must(t, 404)

	start := e.doWith("POST", "/assignments/"+id+"/attempts", student, map[string]any{}, http.Header{"Idempotency-Key": {"start-1"}}).must(t, 200)
	attempt := start.body
	att := str(attempt, "id")
	if strings.Contains(string(start.raw), "correct") {
		t.Fatalf("the attempt shows an answer key: %s", start.raw)
	}
	if qs := attempt["questions"].([]any); len(qs) != 2 || attempt["status"] != "in_progress" || attempt["serverTime"] == nil {
		t.Fatalf("attempt: %s", start.raw)
	}
	// A second tab resumes the same attempt.
	if again := e.do("POST", "/assignments/"+id+"/attempts", student, map[string]any{}).must(t, 200); str(again.body, "id") != att {
		t.Fatalf("a second start made %s; want %s", str(again.body, "id"), att)
	}

	save := func(key, qid string, value any, want int, header http.Header) response {
		t.Helper()
		return e.doWith("PUT", "/attempts/"+att+"/responses/"+qid, key, map[string]any{"value": value}, header).must(t, want)
	}
	keyed := http.Header{"Idempotency-Key": {"save-1"}}
	if r := save(student, mc, "a", 200, keyed); r.body["revision"] != 1.0 {
		t.Fatalf("first save: %s", r.raw)
	}
	if r := save(student, mc, "a", 200, keyed); r.body["revision"] != 1.0 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("a resend of the save: %s %v", r.raw, r.header)
	}
	if r := save(student, mc, "b", 200, nil); r.body["revision"] != 2.0 {
		t.Fatalf("second save: %s", r.raw)
	}
	save(student, num, 0.75, 200, nil)
	if r := save(student, "qst_01JD3M4Q9ZB8K1T7W2X5C6V0ND", 1, 400, nil); r.field() != "questionId" {
		t.Errorf("a question not in the attempt: %s", r.raw)
	}
	e.do("PUT", "/attempts/"+att+"/responses/"+mc, student, `{"value":"a","extra":1}`).must(t, 400)
	e.do("PUT", "/attempts/"+att+"/responses/"+mc, student, map[string]any{"value": strings.Repeat("x", 70<<10)}).must(t, 400)
	e.do("PUT", "/attempts/"+att+"/responses/"+mc, student, map[string]any{"value": "a", "files": []string{"ftp://x"}}).must(t, 400)
	e.do("PUT", "/attempts/not-an-id/responses/"+mc, student, map[string]any{"value": "a"}).must(t, 400)
	if r := e.do("PUT", "/attempts/"+att+"/responses/"+mc, student, map[string]any{"value": "c", "expectedRevision": 1}).must(t, 409); r.reason() != "RESPONSE_CHANGED" {
		t.Errorf("a stale expected revision: %s", r.raw)
	}
	// Another student, and another organization, find nothing.
	e.do("GET", "/attempts/"+att, secondKey, nil).must(t, 404)
	save(secondKey, mc, "c", 404, nil)
	e.do("POST", "/attempts/"+att+"/submit", secondKey, map[string]any{}).must(t, 404)
	e.do("GET", "/attempts/"+att, other.keys[tenancy.RoleOwner], nil).must(t, 404)
	e.do("GET", "/assignments/"+id+"/attempts", other.keys[tenancy.RoleOwner], nil).must(t, 404)
	// Students see no one's progress, attempts or accommodations.
	e.do("GET", "/assignments/"+id+"/attempts", student, nil).must(t, 403)
	e.do("GET", "/assignments/"+id+"/accommodations", student, nil).must(t, 403)

	read := e.do("GET", "/attempts/"+att, student, nil).must(t, 200).body
	if rs := read["responses"].([]any); len(rs) != 2 {
		t.Fatalf("responses: %v", rs)
	}
	done := e.do("POST", "/attempts/"+att+"/submit", student, map[string]any{}).must(t, 200).body
	resultID := str(done, "resultId")
	if done["status"] != "submitted" || done["submittedBy"] != "student" || resultID == "" {
		t.Fatalf("submitted: %v", done)
	}
	if again := e.do("POST", "/attempts/"+att+"/submit", student, map[string]any{}).must(t, 200).body; str(again, "resultId") != resultID {
		t.Fatalf("a second submission made %s; want %s", str(again, "resultId"), resultID)
	}
	res := e.do("GET", "/results/"+resultID, student, nil).must(t, 200).body
	if res["score"] != 3.0 || res["source"] != "attempt" || res["attemptId"] != att || res["assignmentId"] != id {
		t.Errorf("result: %v", res)
	}
	if r := save(student, mc, "a", 409, nil); r.reason() != "ATTEMPT_CLOSED" {
		t.Errorf("a save after submission: %s", r.raw)
	}
	if r := e.do("POST", "/assignments/"+id+"/attempts", student, map[string]any{}).must(t, 409); r.reason() != "ATTEMPTS_EXHAUSTED" {
		t.Errorf("a second attempt: %s", r.raw)
	}

	// Staff: progress, attempts, an accommodation, an edit, deletion.
	progress := e.do("GET", "/assignments/"+id, teacher, nil).must(t, 200).body["progress"].(map[string]any)
	if progress["assigned"] != 2.0 || progress["submitted"] != 1.0 || progress["notStarted"] != 1.0 {
		t.Errorf("progress: %v", progress)
	}
	if list := e.do("GET", "/assignments/"+id+"/attempts?status=submitted", teacher, nil).must(t, 200).body["attempts"].([]any); len(list) != 1 {
		t.Errorf("attempts: %v", list)
	}
	e.do("GET", "/assignments/"+id+"/attempts?status=lost", teacher, nil).must(t, 400)
	e.do("PUT", "/assignments/"+id+"/accommodations/"+second.ID, teacher, map[string]any{"extraTimePercent": 25, "maxAttempts": 2}).must(t, 200)
	e.do("PUT", "/assignments/"+id+"/accommodations/"+other.users[tenancy.RoleStudent].ID, teacher, map[string]any{"extraTimePercent": 25}).must(t, 404)
	e.do("PUT", "/assignments/"+id+"/accommodations/"+second.ID, teacher, map[string]any{"extraTimePercent": -1}).must(t, 400)
	late := e.do("POST", "/assignments/"+id+"/attempts", secondKey, map[string]any{}).must(t, 200).body
	if d, _ := time.Parse(time.RFC3339Nano, str(late, "deadline")); d.Sub(mustTime(t, str(late, "startedAt"))) != 45*time.Minute*5/4 {
		t.Errorf("deadline with 25%% extra time: %v from %v", str(late, "deadline"), str(late, "startedAt"))
	}
	if accs := e.do("GET", "/assignments/"+id+"/accommodations", teacher, nil).must(t, 200).body["accommodations"].([]any); len(accs) != 1 {
		t.Errorf("accommodations: %v", accs)
	}
	patched := e.do("PATCH", "/assignments/"+id, teacher, map[string]any{"userIds": []string{second.ID}, "showResults": "never"}).must(t, 200).body
	if ids := patched["userIds"].([]any); len(ids) != 1 || patched["showResults"] != "never" {
		t.Errorf("patched: %v", patched)
	}
	e.do("PATCH", "/assignments/"+id, teacher, map[string]any{"userIds": []any{1}}).must(t, 400)
	e.do("DELETE", "/assignments/"+id+"/accommodations/"+second.ID, teacher, nil).must(t, 200)
	e.do("DELETE", "/assignments/"+id+"/accommodations/"+second.ID, teacher, nil).must(t, 404)
	e.do("DELETE", "/assignments/"+id, other.keys[tenancy.RoleOwner], nil).must(t, 404)
	e.do("DELETE", "/assignments/"+id, teacher, nil).must(t, 200)
	e.do("GET", "/attempts/"+att, teacher, nil).must(t, 404)
	// The result stays, without its attempt.
	if res := e.do("GET", "/results/"+resultID, teacher, nil).must(t, 200).body; res["attemptId"] != "" || res["source"] != "attempt" {
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
