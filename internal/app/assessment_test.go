package app_test

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

func TestFoldersAndExams(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("FR", "pro")
	other := e.NewTenant("US", "pro")
	teacher := tn.Keys[tenancy.RoleTeacher]

	top := e.Do("POST", "/folders", teacher, map[string]any{"name": "Year 7"}).Must(t, 200).Body
	child := e.Do("POST", "/folders", teacher, map[string]any{"name": "Maths", "parentId": top["id"]}).Must(t, 200).Body
	grandchild := e.Do("POST", "/folders", teacher, map[string]any{"name": "Algebra", "parentId": child["id"]}).Must(t, 200).Body
	if child["parentId"] != top["id"] {
		t.Fatalf("child folder %v", child)
	}
	// No cycles: a folder cannot move under itself or its descendants.
	for _, parent := range []any{top["id"], grandchild["id"]} {
		r := e.Do("PATCH", "/folders/"+apptest.Str(top, "id"), teacher, map[string]any{"parentId": parent}).Must(t, 400)
		if r.Field() != "parentId" {
			t.Fatalf("cycle: field %q, body %s", r.Field(), r.Raw)
		}
	}
	e.Do("PATCH", "/folders/"+apptest.Str(grandchild, "id"), teacher, map[string]any{"parentId": ""}).Must(t, 200)

	// Exams: language is a validated BCP 47 tag, stored canonically.
	for _, bad := range []map[string]any{{"name": "x", "language": "english!"}, {"name": "x"}, {"language": "en"}} {
		r := e.Do("POST", "/exams", teacher, bad).Must(t, 400)
		if r.Field() == "" {
			t.Fatalf("no field in %s", r.Raw)
		}
	}
	exam := e.Do("POST", "/exams", teacher, map[string]any{"name": "Fractions quiz", "language": "pt-br",
		"folderId": child["id"], "durationMinutes": 30}).Must(t, 200).Body
	if exam["language"] != "pt-BR" || exam["folderId"] != child["id"] || apptest.Num(exam, "durationMinutes") != 30 {
		t.Fatalf("exam %v", exam)
	}
	// A non-empty folder cannot be deleted.
	if r := e.Do("DELETE", "/folders/"+apptest.Str(child, "id"), teacher, nil).Must(t, 409); r.Reason() != "FOLDER_NOT_EMPTY" {
		t.Fatalf("delete non-empty folder: %s", r.Raw)
	}
	// PATCH is partial.
	patched := e.Do("PATCH", "/exams/"+apptest.Str(exam, "id"), teacher, map[string]any{"description": "Chapter 3"}).Must(t, 200).Body
	if patched["name"] != "Fractions quiz" || patched["description"] != "Chapter 3" || patched["language"] != "pt-BR" {
		t.Fatalf("patched exam %v", patched)
	}
	if r := e.Do("PATCH", "/exams/"+apptest.Str(exam, "id"), teacher, map[string]any{"language": "x-"}).Must(t, 400); r.Field() != "language" {
		t.Fatalf("patch bad language: %s", r.Raw)
	}

	// The removed endpoints answer 405 and change nothing.
	for _, path := range []string{"/exams/" + apptest.Str(exam, "id"), "/folders/" + apptest.Str(child, "id")} {
		e.Do("POST", path, teacher, map[string]any{"name": "Overwritten"}).Must(t, http.StatusMethodNotAllowed)
	}
	if got := e.Do("GET", "/exams/"+apptest.Str(exam, "id"), teacher, nil).Must(t, 200).Body; got["name"] != "Fractions quiz" || got["updatedAt"] != patched["updatedAt"] {
		t.Fatalf("exam changed by removed endpoint: %v", got)
	}
	if got := e.Do("GET", "/folders/"+apptest.Str(child, "id"), teacher, nil).Must(t, 200).Body; got["name"] != "Maths" {
		t.Fatalf("folder changed by removed endpoint: %v", got)
	}

	// Filters: folder and name search.
	e.Do("POST", "/exams", teacher, map[string]any{"name": "History test", "language": "en"}).Must(t, 200)
	if l := apptest.Items(e.Do("GET", "/exams?folderId="+apptest.Str(child, "id"), teacher, nil).Must(t, 200).Body, "exams"); len(l) != 1 || l[0]["id"] != exam["id"] {
		t.Fatalf("folder filter: %v", l)
	}
	if l := apptest.Items(e.Do("GET", "/exams?q=HISTORY", teacher, nil).Must(t, 200).Body, "exams"); len(l) != 1 || l[0]["name"] != "History test" {
		t.Fatalf("name search: %v", l)
	}
	if l := apptest.Items(e.Do("GET", "/exams?folderId=root", teacher, nil).Must(t, 200).Body, "exams"); len(l) != 1 || l[0]["name"] != "History test" {
		t.Fatalf("root filter: %v", l)
	}

	// Students read exams but cannot author them.
	e.Do("GET", "/exams/"+apptest.Str(exam, "id"), tn.Keys[tenancy.RoleStudent], nil).Must(t, 200)
	e.Do("POST", "/exams", tn.Keys[tenancy.RoleStudent], map[string]any{"name": "x", "language": "en"}).Must(t, 403)

	// Another organization's ids are 404, for every verb.
	otherKey := other.Keys[tenancy.RoleOwner]
	for _, req := range [][2]string{{"GET", "/exams/"}, {"PATCH", "/exams/"}, {"DELETE", "/exams/"}} {
		var body any
		if req[0] == "PATCH" {
			body = map[string]any{"name": "Stolen"}
		}
		e.Do(req[0], req[1]+apptest.Str(exam, "id"), otherKey, body).Must(t, 404)
	}
	e.Do("GET", "/folders/"+apptest.Str(child, "id"), otherKey, nil).Must(t, 404)
	e.Do("POST", "/exams", otherKey, map[string]any{"name": "x", "language": "en", "folderId": child["id"]}).Must(t, 400)
	e.Do("GET", "/exams/"+apptest.Str(exam, "id")+"/questions", otherKey, nil).Must(t, 404)

	// Deleting: exam, then the now-empty folder; audit entries for each change.
	e.Do("DELETE", "/exams/"+apptest.Str(exam, "id"), teacher, nil).Must(t, 200)
	e.Do("GET", "/exams/"+apptest.Str(exam, "id"), teacher, nil).Must(t, 404)
	e.Do("DELETE", "/folders/"+apptest.Str(child, "id"), teacher, nil).Must(t, 200)
	logs := apptest.Items(e.Do("GET", "/audit-logs?targetId="+apptest.Str(exam, "id"), tn.Keys[tenancy.RoleOwner], nil).Must(t, 200).Body, "auditLogs")
	var actions []string
	for _, l := range logs {
		actions = append(actions, apptest.Str(l, "action"))
	}
	if !slices.Equal(actions, []string{"exam.deleted", "exam.updated", "exam.created"}) {
		t.Fatalf("exam audit actions %v", actions)
	}
	if logs := apptest.Items(e.Do("GET", "/audit-logs?action=folder.deleted", tn.Keys[tenancy.RoleOwner], nil).Must(t, 200).Body, "auditLogs"); len(logs) != 1 {
		t.Fatalf("folder.deleted entries: %v", logs)
	}
}

func TestExamPaginationIsStable(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	key := tn.Keys[tenancy.RoleTeacher]
	var created []string
	for i := range 5 {
		created = append(created, apptest.Str(e.Do("POST", "/exams", key, map[string]any{"name": fmt.Sprintf("Exam %d", i), "language": "en"}).Must(t, 200).Body, "id"))
	}
	var seen []string
	token := ""
	for page := 0; ; page++ {
		body := e.Do("GET", "/exams?pageSize=2&pageToken="+token, key, nil).Must(t, 200).Body
		for _, x := range apptest.Items(body, "exams") {
			seen = append(seen, apptest.Str(x, "id"))
		}
		if page == 0 { // an insert while paging appears once, at the end
			created = append(created, apptest.Str(e.Do("POST", "/exams", key, map[string]any{"name": "Late", "language": "en"}).Must(t, 200).Body, "id"))
		}
		if token = apptest.Str(body, "nextPageToken"); token == "" {
			break
		}
	}
	if !slices.Equal(seen, created) {
		t.Fatalf("paged %v, want %v", seen, created)
	}
	if r := e.Do("GET", "/exams?pageToken=garbage", key, nil).Must(t, 400); r.Field() != "pageToken" {
		t.Fatalf("bad token: %s", r.Raw)
	}
}

// authoring creates an exam with one question of every built-in type.
type authoring struct {
	exam      string
	questions map[string]string // type key -> question id
}

func authorAllTypes(e *env, t *testing.T, key string) authoring {
	t.Helper()
	a := authoring{questions: map[string]string{}}
	a.exam = apptest.Str(e.Do("POST", "/exams", key, map[string]any{"name": "Everything", "language": "en"}).Must(t, 200).Body, "id")
	for _, q := range []map[string]any{
		{"type": "multiple_choice", "prompt": "What is 2 + 2?", "points": 2, "config": map[string]any{"options": []any{
			map[string]any{"id": "a", "text": "3"}, map[string]any{"id": "b", "text": "4", "correct": true}, map[string]any{"id": "c", "text": "5"}}}},
		{"type": "multiple_select", "prompt": "Which numbers are prime?", "config": map[string]any{"options": []any{
			map[string]any{"id": "a", "text": "2", "correct": true}, map[string]any{"id": "b", "text": "3", "correct": true}, map[string]any{"id": "c", "text": "4"}}}},
		{"type": "true_false", "prompt": "The earth orbits the sun.", "config": map[string]any{"correct": true}},
		{"type": "short_text", "prompt": "What is the capital of France?", "config": map[string]any{"acceptedAnswers": []any{"Paris"}}},
		{"type": "numeric", "prompt": "What is pi to two decimals?", "config": map[string]any{"correct": 3.14, "tolerance": 0.01}},
		{"type": "essay", "prompt": "Explain photosynthesis in your own words.", "points": 5, "config": map[string]any{"rubric": "Mentions light, water, CO2."}},
		{"type": "file_upload", "prompt": "Upload your lab report as a PDF file.", "points": 5, "config": map[string]any{"maxFiles": 2}},
	} {
		body := e.Do("POST", "/exams/"+a.exam+"/questions", key, q).Must(t, 200).Body
		a.questions[q["type"].(string)] = apptest.Str(body, "id")
	}
	return a
}

func TestQuestionsScoringAndResults(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	other := e.NewTenant("DE", "pro")
	key := tn.Keys[tenancy.RoleTeacher]
	a := authorAllTypes(e, t, key)
	base := "/exams/" + a.exam + "/questions"

	// Reading a question returns its resolved type definition.
	q := e.Do("GET", base+"/"+a.questions["numeric"], key, nil).Must(t, 200).Body
	def, _ := q["typeDefinition"].(map[string]any)
	if def["key"] != "numeric" || def["builtIn"] != true || !strings.HasPrefix(apptest.Str(def["responseProcessing"].(map[string]any), "condition"), "=") {
		t.Fatalf("resolved type %v", q)
	}
	if st := q["typeStatus"].(map[string]any); st["state"] != "OK" {
		t.Fatalf("type status %v", st)
	}
	// Config is validated against the type, naming the offending field.
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"type": "numeric", "prompt": "x y z", "config": map[string]any{"correct": "three"}}, "config.correct"},
		{map[string]any{"type": "multiple_choice", "prompt": "x y z", "config": map[string]any{"options": []any{map[string]any{"id": "a"}}}}, "config.options"},
		{map[string]any{"type": "true_false", "prompt": "x y z", "config": map[string]any{"correct": true, "extra": 1}}, "config"},
		{map[string]any{"type": "nonsense", "prompt": "x y z"}, "type"},
		{map[string]any{"type": "essay", "prompt": "x y z", "points": -1}, "points"},
	} {
		r := e.Do("POST", base, key, tc.body).Must(t, 400)
		if !strings.HasPrefix(r.Field(), tc.field) {
			t.Fatalf("%v: field %q, want %q (%s)", tc.body, r.Field(), tc.field, r.Raw)
		}
	}

	// Reorder: a permutation of every question; anything else is a 400.
	list := apptest.Items(e.Do("GET", base, key, nil).Must(t, 200).Body, "questions")
	var order []string
	for i := len(list) - 1; i >= 0; i-- {
		order = append(order, apptest.Str(list[i], "id"))
	}
	e.Do("POST", base+"/reorder", key, map[string]any{"questionIds": order[:3]}).Must(t, 400)
	reordered := apptest.Items(e.Do("POST", base+"/reorder", key, map[string]any{"questionIds": order}).Must(t, 200).Body, "questions")
	if apptest.Str(reordered[0], "id") != order[0] || apptest.Num(reordered[0], "position") != 1 {
		t.Fatalf("reordered %v", reordered[0])
	}
	// Paging questions follows the order.
	page1 := e.Do("GET", base+"?pageSize=4", key, nil).Must(t, 200).Body
	page2 := e.Do("GET", base+"?pageSize=4&pageToken="+apptest.Str(page1, "nextPageToken"), key, nil).Must(t, 200).Body
	if got := len(apptest.Items(page1, "questions")) + len(apptest.Items(page2, "questions")); got != 7 || apptest.Str(apptest.Items(page2, "questions")[0], "id") != order[4] {
		t.Fatalf("question pages: %v %v", page1, page2)
	}

	// Submit: rule-scored answers are scored now, AI-graded ones pending.
	student := tn.Users[tenancy.RoleStudent].ID
	res := e.Do("POST", "/exams/"+a.exam+"/results", key, map[string]any{"userId": student, "answers": []any{
		map[string]any{"questionId": a.questions["multiple_choice"], "value": "b"},
		map[string]any{"questionId": a.questions["multiple_select"], "value": []any{"b", "a"}},
		map[string]any{"questionId": a.questions["true_false"], "value": false},
		map[string]any{"questionId": a.questions["short_text"], "value": "  paris "},
		map[string]any{"questionId": a.questions["numeric"], "value": 3.149},
		map[string]any{"questionId": a.questions["essay"], "value": "Plants use light."},
		map[string]any{"questionId": a.questions["file_upload"], "value": "report", "files": []any{"https://cdn.example.com/r.pdf"}},
	}}).Must(t, 200).Body
	if res["status"] != "grading" || apptest.Num(res, "score") != 5 || apptest.Num(res, "maxScore") != 16 {
		t.Fatalf("result %s", e.Do("GET", "/results/"+apptest.Str(res, "id"), key, nil).Raw)
	}
	want := map[string][2]any{ // question -> status, score
		a.questions["multiple_choice"]: {"graded", 2.0}, a.questions["multiple_select"]: {"graded", 1.0},
		a.questions["true_false"]: {"graded", 0.0}, a.questions["short_text"]: {"graded", 1.0},
		a.questions["numeric"]: {"graded", 1.0}, a.questions["essay"]: {"pending", 0.0}, a.questions["file_upload"]: {"pending", 0.0},
	}
	for _, ans := range apptest.Items(res, "answers") {
		if w := want[apptest.Str(ans, "questionId")]; ans["status"] != w[0] || apptest.Num(ans, "score") != w[1] {
			t.Fatalf("answer %v, want %v", ans, w)
		}
	}
	// Only rule-scored questions: graded at once; wrong answers score 0.
	rulesOnly := e.Do("POST", "/exams", key, map[string]any{"name": "Rules", "language": "en"}).Must(t, 200).Body
	tf := apptest.Str(e.Do("POST", "/exams/"+apptest.Str(rulesOnly, "id")+"/questions", key, map[string]any{"type": "numeric", "prompt": "What is 7 times 6?",
		"config": map[string]any{"correct": 42}}).Must(t, 200).Body, "id")
	r2 := e.Do("POST", "/exams/"+apptest.Str(rulesOnly, "id")+"/results", key, map[string]any{"userId": student, "answers": []any{
		map[string]any{"questionId": tf, "value": "42"}}}).Must(t, 200).Body
	if r2["status"] != "graded" || apptest.Num(r2, "score") != 0 {
		t.Fatalf("string for a number: %v", r2)
	}

	// Bad submissions are 400s naming the field.
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"userId": student, "answers": []any{map[string]any{"questionId": tf, "value": 1}}}, "answers.0.questionId"},
		{map[string]any{"userId": student, "answers": []any{map[string]any{"questionId": a.questions["essay"], "value": "x", "files": []any{"not a url"}}}}, "answers.0.files.0"},
		{map[string]any{"userId": other.Users[tenancy.RoleStudent].ID}, "userId"},
		// The question takes two files; a file listed twice is refused too.
		{map[string]any{"userId": student, "answers": []any{map[string]any{"questionId": a.questions["file_upload"],
			"files": []any{"https://cdn.example.com/1.pdf", "https://cdn.example.com/2.pdf", "https://cdn.example.com/3.pdf"}}}}, "answers.0.files"},
		{map[string]any{"userId": student, "answers": []any{map[string]any{"questionId": a.questions["essay"], "value": "x",
			"files": []any{"https://cdn.example.com/r.pdf", "https://cdn.example.com/r.pdf"}}}}, "answers.0.files.1"},
	} {
		if r := e.Do("POST", "/exams/"+a.exam+"/results", key, tc.body).Must(t, 400); r.Field() != tc.field {
			t.Fatalf("field %q, want %q: %s", r.Field(), tc.field, r.Raw)
		}
	}

	// Reads: by id on both paths, lists with filters; students see their own only.
	e.Do("GET", "/exams/"+a.exam+"/results/"+apptest.Str(res, "id"), key, nil).Must(t, 200)
	e.Do("GET", "/exams/"+a.exam+"/results/summary", key, nil).Must(t, 200)
	e.Do("GET", "/exams/"+apptest.Str(rulesOnly, "id")+"/results/"+apptest.Str(res, "id"), key, nil).Must(t, 404)
	if l := apptest.Items(e.Do("GET", "/exams/"+a.exam+"/results?status=grading&userId="+student, key, nil).Must(t, 200).Body, "results"); len(l) != 1 {
		t.Fatalf("filtered results %v", l)
	}
	if l := apptest.Items(e.Do("GET", "/exams/"+a.exam+"/results?status=graded", key, nil).Must(t, 200).Body, "results"); len(l) != 0 {
		t.Fatalf("graded results %v", l)
	}
	e.Do("GET", "/results/"+apptest.Str(res, "id"), tn.Keys[tenancy.RoleStudent], nil).Must(t, 200)
	e.Do("GET", "/results/"+apptest.Str(res, "id"), other.Keys[tenancy.RoleOwner], nil).Must(t, 404)
	e.Do("GET", "/exams/"+a.exam+"/results", other.Keys[tenancy.RoleOwner], nil).Must(t, 404)
	e.Do("GET", base+"/"+a.questions["essay"], other.Keys[tenancy.RoleOwner], nil).Must(t, 404)

	// Deleting a question closes the gap; audit entries exist.
	e.Do("DELETE", base+"/"+order[0], key, nil).Must(t, 200)
	after := apptest.Items(e.Do("GET", base, key, nil).Must(t, 200).Body, "questions")
	if len(after) != 6 || apptest.Num(after[0], "position") != 1 || apptest.Str(after[0], "id") != order[1] {
		t.Fatalf("after delete %v", after)
	}
	for _, action := range []string{"question.created", "question.deleted", "exam.questions_reordered"} {
		if l := apptest.Items(e.Do("GET", "/audit-logs?action="+action, tn.Keys[tenancy.RoleOwner], nil).Must(t, 200).Body, "auditLogs"); len(l) == 0 {
			t.Fatalf("no %s audit entry", action)
		}
	}
}

// customType is a custom question type definition body.
func customType(key string, public bool) map[string]any {
	return map[string]any{
		"key": key, "name": "Word count", "description": "Answer with exactly config.words words.",
		"configSchema": map[string]any{"type": "object", "required": []any{"words"},
			"properties": map[string]any{"words": map[string]any{"type": "integer", "minimum": 1}}},
		"responseProcessing": map[string]any{"condition": `=$count($split($trim(answer.value), " ")) = config.words`},
		"public":             public,
	}
}

func TestQuestionTypeDefinitionsAcrossOrganizations(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	owner := e.NewTenant("US", "pro")
	user := e.NewTenant("FR", "pro")
	late := e.NewTenant("DE", "pro")
	ok, uk, lk := owner.Keys[tenancy.RoleTeacher], user.Keys[tenancy.RoleTeacher], late.Keys[tenancy.RoleTeacher]

	typ := e.Do("POST", "/question-types", ok, customType("word_count", true)).Must(t, 200).Body
	id := apptest.Str(typ, "id")
	e.Do("POST", "/question-types", ok, customType("word_count", true)).Must(t, 409)
	private := apptest.Str(e.Do("POST", "/question-types", ok, customType("secret", false)).Must(t, 200).Body, "id")

	// Discovery lists other organizations' public types only.
	disc := apptest.Items(e.Do("GET", "/question-types/discover", uk, nil).Must(t, 200).Body, "questionTypes")
	if len(disc) != 1 || apptest.Str(disc[0], "id") != id || disc[0]["enabled"] != false {
		t.Fatalf("discover %v", disc)
	}
	e.Do("GET", "/question-types/"+private, uk, nil).Must(t, 404)
	e.Do("POST", "/question-types/"+private+"/enable", uk, map[string]any{}).Must(t, 404)
	e.Do("PATCH", "/question-types/"+id, uk, map[string]any{"name": "Hijacked"}).Must(t, 404)

	// Not enabled yet: no questions of it.
	userExam := apptest.Str(e.Do("POST", "/exams", uk, map[string]any{"name": "Writing", "language": "fr"}).Must(t, 200).Body, "id")
	newQ := map[string]any{"type": id, "prompt": "Describe Paris in three words.", "config": map[string]any{"words": 3}}
	if r := e.Do("POST", "/exams/"+userExam+"/questions", uk, newQ).Must(t, 400); r.Reason() != "QUESTION_TYPE_NOT_ENABLED" {
		t.Fatalf("not enabled: %s", r.Raw)
	}
	if en := e.Do("POST", "/question-types/"+id+"/enable", uk, map[string]any{}).Must(t, 200).Body; en["enabled"] != true {
		t.Fatalf("enable %v", en)
	}
	if l := apptest.Items(e.Do("GET", "/question-types/discover", uk, nil).Must(t, 200).Body, "questionTypes"); len(l) != 0 {
		t.Fatalf("an enabled type is still discoverable: %v", l)
	}
	userQ := apptest.Str(e.Do("POST", "/exams/"+userExam+"/questions", uk, newQ).Must(t, 200).Body, "id")
	if r := e.Do("POST", "/exams/"+userExam+"/questions", uk, map[string]any{"type": id, "prompt": "a b c", "config": map[string]any{"words": 0}}).Must(t, 400); r.Field() != "config.words" {
		t.Fatalf("custom config validation: %s", r.Raw)
	}
	student := user.Users[tenancy.RoleStudent].ID
	res := e.Do("POST", "/exams/"+userExam+"/results", uk, map[string]any{"userId": student, "answers": []any{
		map[string]any{"questionId": userQ, "value": "big old city"}}}).Must(t, 200).Body
	if apptest.Num(res, "score") != 1 || res["status"] != "graded" {
		t.Fatalf("custom type scoring: %v", res)
	}

	// The owner deprecates: existing questions keep rendering and grading,
	// no new ones, and organizations that have not enabled it cannot
	// discover or enable it any more.
	ownerExam := apptest.Str(e.Do("POST", "/exams", ok, map[string]any{"name": "Own", "language": "en"}).Must(t, 200).Body, "id")
	ownerQ := apptest.Str(e.Do("POST", "/exams/"+ownerExam+"/questions", ok, newQ).Must(t, 200).Body, "id")
	e.Do("PATCH", "/question-types/"+id, ok, map[string]any{"deprecated": true}).Must(t, 200)
	if q := e.Do("GET", "/exams/"+userExam+"/questions/"+userQ, uk, nil).Must(t, 200).Body; q["typeDefinition"] == nil {
		t.Fatalf("deprecated type stopped rendering: %v", q)
	}
	if r := e.Do("POST", "/exams/"+userExam+"/results", uk, map[string]any{"userId": student, "answers": []any{
		map[string]any{"questionId": userQ, "value": "one two three"}}}).Must(t, 200).Body; apptest.Num(r, "score") != 1 {
		t.Fatalf("deprecated type stopped grading: %v", r)
	}
	for _, k := range []string{uk, ok} {
		exam := userExam
		if k == ok {
			exam = ownerExam
		}
		if r := e.Do("POST", "/exams/"+exam+"/questions", k, newQ).Must(t, 400); r.Reason() != "QUESTION_TYPE_DEPRECATED" {
			t.Fatalf("new question of a deprecated type: %s", r.Raw)
		}
	}
	if l := apptest.Items(e.Do("GET", "/question-types/discover", lk, nil).Must(t, 200).Body, "questionTypes"); len(l) != 0 {
		t.Fatalf("deprecated type discoverable: %v", l)
	}
	if r := e.Do("POST", "/question-types/"+id+"/enable", lk, map[string]any{}).Must(t, 400); r.Reason() != "QUESTION_TYPE_DEPRECATED" {
		t.Fatalf("enable deprecated: %s", r.Raw)
	}
	// An organization that already enabled it keeps it enabled.
	e.Do("POST", "/question-types/"+id+"/enable", uk, map[string]any{}).Must(t, 200)

	// The owner makes it private: other organizations' questions stop
	// rendering, explicitly; the owner is unaffected.
	e.Do("PATCH", "/question-types/"+id, ok, map[string]any{"public": false, "deprecated": false}).Must(t, 200)
	q := e.Do("GET", "/exams/"+userExam+"/questions/"+userQ, uk, nil).Must(t, 200).Body
	st, _ := q["typeStatus"].(map[string]any)
	if q["typeDefinition"] != nil || st["state"] != "FAILED_PRECONDITION" || st["reason"] != "QUESTION_TYPE_UNAVAILABLE" {
		t.Fatalf("private type still resolves elsewhere: %v", q)
	}
	if l := apptest.Items(e.Do("GET", "/exams/"+userExam+"/questions", uk, nil).Must(t, 200).Body, "questions"); len(l) != 1 {
		t.Fatalf("unresolvable question dropped from the list: %v", l)
	}
	if r := e.Do("POST", "/exams/"+userExam+"/results", uk, map[string]any{"userId": student, "answers": []any{
		map[string]any{"questionId": userQ, "value": "one two three"}}}).Must(t, 200).Body; r["status"] != "failed" {
		t.Fatalf("unresolvable question graded: %v", r)
	}
	if q := e.Do("GET", "/exams/"+ownerExam+"/questions/"+ownerQ, ok, nil).Must(t, 200).Body; q["typeDefinition"] == nil {
		t.Fatalf("owner's question stopped rendering: %v", q)
	}
	e.Do("GET", "/question-types/"+id, uk, nil).Must(t, 404)
	var actions []string
	for _, entry := range apptest.Items(e.Do("GET", "/audit-logs?targetId="+id, owner.Keys[tenancy.RoleOwner], nil).Must(t, 200).Body, "auditLogs") {
		actions = append(actions, apptest.Str(entry, "action"))
	}
	if got := strings.Join(actions, " "); got != "question_type.made_private question_type.updated question_type.deprecated question_type.updated question_type.created" {
		t.Fatalf("question type audit entries, newest first: %s", got)
	}
}

func TestQuestionTypeExpressionsAreValidated(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	key := tn.Keys[tenancy.RoleTeacher]
	for _, tc := range []struct {
		name  string
		patch func(map[string]any)
		field string
		says  string
	}{
		{"condition without =", func(b map[string]any) { b["responseProcessing"] = map[string]any{"condition": "answer.value"} }, "responseProcessing.condition", `starting with "="`},
		{"condition syntax", func(b map[string]any) { b["responseProcessing"] = map[string]any{"condition": "=answer.value = ("} }, "responseProcessing.condition", "not valid JSONata"},
		{"recursive condition", func(b map[string]any) {
			b["responseProcessing"] = map[string]any{"condition": "=($f := function($x){ $f($x) }; $f(1))"}
		}, "responseProcessing.condition", "callback"},
		{"fileInputs syntax", func(b map[string]any) {
			delete(b, "responseProcessing")
			b["grading"] = map[string]any{"enabled": true, "fileInputs": "=answer.files["}
		}, "grading.fileInputs", "not valid JSONata"},
		{"fileInputs without =", func(b map[string]any) {
			delete(b, "responseProcessing")
			b["grading"] = map[string]any{"enabled": true, "fileInputs": "answer.files"}
		}, "grading.fileInputs", `starting with "="`},
		{"bad schema", func(b map[string]any) { b["configSchema"] = map[string]any{"type": "nonsense"} }, "configSchema", "JSON Schema"},
		{"file reference in schema", func(b map[string]any) { b["configSchema"] = map[string]any{"$ref": "file:///etc/passwd"} }, "configSchema", "JSON Schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := customType("t_"+fmt.Sprint(len(tc.name)), false)
			tc.patch(b)
			r := e.Do("POST", "/question-types", key, b).Must(t, 400)
			if r.Field() != tc.field || !strings.Contains(apptest.Str(r.Body, "message"), tc.says) {
				t.Fatalf("field %q message %q", r.Field(), apptest.Str(r.Body, "message"))
			}
		})
	}
	ai := customType("ai_report", false)
	delete(ai, "responseProcessing")
	ai["grading"] = map[string]any{"enabled": true, "fileInputs": "=answer.files"}
	got := e.Do("POST", "/question-types", key, ai).Must(t, 200).Body
	if g := got["grading"].(map[string]any); g["fileInputs"] != "=answer.files" || g["enabled"] != true {
		t.Fatalf("grading %v", g)
	}
	// PATCH validates too, and an invalid patch changes nothing.
	id := apptest.Str(got, "id")
	e.Do("PATCH", "/question-types/"+id, key, map[string]any{"grading": map[string]any{"fileInputs": "=("}}).Must(t, 400)
	if g := e.Do("GET", "/question-types/"+id, key, nil).Must(t, 200).Body["grading"].(map[string]any); g["fileInputs"] != "=answer.files" {
		t.Fatalf("invalid patch changed the type: %v", g)
	}
}

func TestResultsSummaryMath(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	key := tn.Keys[tenancy.RoleTeacher]
	exam := apptest.Str(e.Do("POST", "/exams", key, map[string]any{"name": "Stats", "language": "en"}).Must(t, 200).Body, "id")
	q1 := apptest.Str(e.Do("POST", "/exams/"+exam+"/questions", key, map[string]any{"type": "true_false", "prompt": "Water boils at 100 C at sea level.", "config": map[string]any{"correct": true}}).Must(t, 200).Body, "id")
	q2 := apptest.Str(e.Do("POST", "/exams/"+exam+"/questions", key, map[string]any{"type": "numeric", "prompt": "What is 6 times 7?", "points": 3, "config": map[string]any{"correct": 42}}).Must(t, 200).Body, "id")
	// Four students: (q1, q2) right/wrong -> totals 4, 1, 3, 0 of 4.
	answers := [][2]any{{true, 42}, {true, 1}, {false, 42}, {false, 0}}
	for _, a := range answers {
		e.Do("POST", "/exams/"+exam+"/results", key, map[string]any{"userId": tn.Users[tenancy.RoleStudent].ID, "answers": []any{
			map[string]any{"questionId": q1, "value": a[0]}, map[string]any{"questionId": q2, "value": a[1]}}}).Must(t, 200)
	}
	s := e.Do("GET", "/exams/"+exam+"/results/summary", key, nil).Must(t, 200).Body
	// Scores 4, 1, 3, 0: mean 2, median 2, population sd sqrt(2.5).
	if apptest.Num(s, "count") != 4 || apptest.Num(s, "gradedCount") != 4 || apptest.Num(s, "mean") != 2 || apptest.Num(s, "median") != 2 ||
		math.Abs(apptest.Num(s, "stdDev")-math.Sqrt(2.5)) > 1e-9 || apptest.Num(s, "min") != 0 || apptest.Num(s, "max") != 4 {
		t.Fatalf("summary %v", s)
	}
	hist := apptest.Items(s, "histogram")
	counts := make([]float64, len(hist))
	for i, b := range hist {
		counts[i] = apptest.Num(b, "count")
	}
	// 0% -> bucket 0, 25% -> 2, 75% -> 7, 100% -> 9 (the last bucket is closed).
	if !slices.Equal(counts, []float64{1, 0, 1, 0, 0, 0, 0, 1, 0, 1}) {
		t.Fatalf("histogram %v", counts)
	}
	qs := apptest.Items(s, "questions")
	if len(qs) != 2 || apptest.Str(qs[0], "questionId") != q1 || apptest.Num(qs[0], "difficulty") != 0.5 || apptest.Num(qs[1], "meanScore") != 1.5 {
		t.Fatalf("question stats %v", qs)
	}
	// q1 item scores 1,1,0,0 against rest scores 3,0,3,0: uncorrelated.
	// q2 item scores 3,0,3,0 against rest 1,1,0,0: also 0.
	for _, q := range qs {
		if d, ok := q["discrimination"].(float64); !ok || math.Abs(d) > 1e-9 {
			t.Fatalf("discrimination %v", q)
		}
	}
	e.Do("GET", "/exams/"+exam+"/results/summary", tn.Keys[tenancy.RoleStudent], nil).Must(t, 403)
	e.Do("GET", "/exams/"+exam+"/results/summary", e.NewTenant("FR", "pro").Keys[tenancy.RoleOwner], nil).Must(t, 404)
}

func TestQuestionQuality(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("US", "pro")
	key := tn.Keys[tenancy.RoleTeacher]
	exam := apptest.Str(e.Do("POST", "/exams", key, map[string]any{"name": "Quality", "language": "en"}).Must(t, 200).Body, "id")
	bad := apptest.Str(e.Do("POST", "/exams/"+exam+"/questions", key, map[string]any{"type": "multiple_choice",
		"prompt": "Which of the following is not usually a mammal?",
		"config": map[string]any{"options": []any{
			map[string]any{"id": "a", "text": "Whale", "correct": true},
			map[string]any{"id": "b", "text": "Whale.", "correct": true},
			map[string]any{"id": "c", "text": "Dolphins"},
			map[string]any{"id": "d", "text": "Dolphin"},
			map[string]any{"id": "e", "text": "All of the above"}}}}).Must(t, 200).Body, "id")
	r := e.Do("GET", "/exams/"+exam+"/questions/"+bad+"/quality", key, nil).Must(t, 200).Body
	codes := map[string]string{}
	for _, f := range apptest.Items(r, "findings") {
		codes[apptest.Str(f, "code")] = apptest.Str(f, "field")
	}
	for code, field := range map[string]string{"NEGATIVE_STEM": "prompt", "AMBIGUOUS_STEM": "prompt", "DUPLICATE_OPTIONS": "config.options.1.text",
		"NEAR_DUPLICATE_OPTIONS": "config.options.3.text", "ALL_NONE_OF_THE_ABOVE": "config.options.4.text", "MULTIPLE_CORRECT_OPTIONS": "config.options"} {
		if got, ok := codes[code]; !ok || got != field {
			t.Fatalf("finding %s (field %q) missing: %v", code, field, codes)
		}
	}
	if apptest.Num(r, "score") >= 50 || r["statistics"] != nil {
		t.Fatalf("quality %v", r)
	}
	good := apptest.Str(e.Do("POST", "/exams/"+exam+"/questions", key, map[string]any{"type": "true_false",
		"prompt": "Water boils at 100 degrees Celsius at sea level.", "config": map[string]any{"correct": true}}).Must(t, 200).Body, "id")
	// Everyone answers the same: the item does not discriminate.
	for range 5 {
		e.Do("POST", "/exams/"+exam+"/results", key, map[string]any{"userId": tn.Users[tenancy.RoleStudent].ID, "answers": []any{
			map[string]any{"questionId": good, "value": true}}}).Must(t, 200)
	}
	r = e.Do("GET", "/exams/"+exam+"/questions/"+good+"/quality", key, nil).Must(t, 200).Body
	stats, _ := r["statistics"].(map[string]any)
	if stats == nil || apptest.Num(stats, "responses") != 5 || apptest.Num(stats, "difficulty") != 1 {
		t.Fatalf("statistics %v", r)
	}
	found := false
	for _, f := range apptest.Items(r, "findings") {
		found = found || f["code"] == "NO_DISCRIMINATION"
	}
	if !found {
		t.Fatalf("no NO_DISCRIMINATION finding: %v", r)
	}
}
