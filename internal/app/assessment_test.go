package app_test

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/assessd/assessd/tenancy"
)

// str reads a string field of a JSON object.
func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

// num reads a number field of a JSON object.
func num(m map[string]any, k string) float64 { f, _ := m[k].(float64); return f }

// items reads a list field of a JSON object as objects.
func items(m map[string]any, k string) []map[string]any {
	raw, _ := m[k].([]any)
	out := make([]map[string]any, len(raw))
	for i, r := range raw {
		out[i], _ = r.(map[string]any)
	}
	return out
}

func TestFoldersAndExams(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("FR", "pro")
	other := e.newTenant("US", "pro")
	teacher := tn.keys[tenancy.RoleTeacher]

	top := e.do("POST", "/folders", teacher, map[string]any{"name": "Year 7"}).must(t, 200).body
	child := e.do("POST", "/folders", teacher, map[string]any{"name": "Maths", "parentId": top["id"]}).must(t, 200).body
	grandchild := e.do("POST", "/folders", teacher, map[string]any{"name": "Algebra", "parentId": child["id"]}).must(t, 200).body
	if child["parentId"] != top["id"] {
		t.Fatalf("child folder %v", child)
	}
	// No cycles: a folder cannot move under itself or its descendants.
	for _, parent := range []any{top["id"], grandchild["id"]} {
		r := e.do("PATCH", "/folders/"+str(top, "id"), teacher, map[string]any{"parentId": parent}).must(t, 400)
		if r.field() != "parentId" {
			t.Fatalf("cycle: field %q, body %s", r.field(), r.raw)
		}
	}
	e.do("PATCH", "/folders/"+str(grandchild, "id"), teacher, map[string]any{"parentId": ""}).must(t, 200)

	// Exams: language is a validated BCP 47 tag, stored canonically.
	for _, bad := range []map[string]any{{"name": "x", "language": "english!"}, {"name": "x"}, {"language": "en"}} {
		r := e.do("POST", "/exams", teacher, bad).must(t, 400)
		if r.field() == "" {
			t.Fatalf("no field in %s", r.raw)
		}
	}
	exam := e.do("POST", "/exams", teacher, map[string]any{"name": "Fractions quiz", "language": "pt-br",
		"folderId": child["id"], "durationMinutes": 30}).must(t, 200).body
	if exam["language"] != "pt-BR" || exam["folderId"] != child["id"] || num(exam, "durationMinutes") != 30 {
		t.Fatalf("exam %v", exam)
	}
	// A non-empty folder cannot be deleted.
	if r := e.do("DELETE", "/folders/"+str(child, "id"), teacher, nil).must(t, 409); r.reason() != "FOLDER_NOT_EMPTY" {
		t.Fatalf("delete non-empty folder: %s", r.raw)
	}
	// PATCH is partial.
	patched := e.do("PATCH", "/exams/"+str(exam, "id"), teacher, map[string]any{"description": "Chapter 3"}).must(t, 200).body
	if patched["name"] != "Fractions quiz" || patched["description"] != "Chapter 3" || patched["language"] != "pt-BR" {
		t.Fatalf("patched exam %v", patched)
	}
	if r := e.do("PATCH", "/exams/"+str(exam, "id"), teacher, map[string]any{"language": "x-"}).must(t, 400); r.field() != "language" {
		t.Fatalf("patch bad language: %s", r.raw)
	}

	// The removed endpoints answer 405 and change nothing.
	for _, path := range []string{"/exams/" + str(exam, "id"), "/folders/" + str(child, "id")} {
		e.do("POST", path, teacher, map[string]any{"name": "Overwritten"}).must(t, http.StatusMethodNotAllowed)
	}
	if got := e.do("GET", "/exams/"+str(exam, "id"), teacher, nil).must(t, 200).body; got["name"] != "Fractions quiz" || got["updatedAt"] != patched["updatedAt"] {
		t.Fatalf("exam changed by removed endpoint: %v", got)
	}
	if got := e.do("GET", "/folders/"+str(child, "id"), teacher, nil).must(t, 200).body; got["name"] != "Maths" {
		t.Fatalf("folder changed by removed endpoint: %v", got)
	}

	// Filters: folder and name search.
	e.do("POST", "/exams", teacher, map[string]any{"name": "History test", "language": "en"}).must(t, 200)
	if l := items(e.do("GET", "/exams?folderId="+str(child, "id"), teacher, nil).must(t, 200).body, "exams"); len(l) != 1 || l[0]["id"] != exam["id"] {
		t.Fatalf("folder filter: %v", l)
	}
	if l := items(e.do("GET", "/exams?q=HISTORY", teacher, nil).must(t, 200).body, "exams"); len(l) != 1 || l[0]["name"] != "History test" {
		t.Fatalf("name search: %v", l)
	}
	if l := items(e.do("GET", "/exams?folderId=root", teacher, nil).must(t, 200).body, "exams"); len(l) != 1 || l[0]["name"] != "History test" {
		t.Fatalf("root filter: %v", l)
	}

	// Students read exams but cannot author them.
	e.do("GET", "/exams/"+str(exam, "id"), tn.keys[tenancy.RoleStudent], nil).must(t, 200)
	e.do("POST", "/exams", tn.keys[tenancy.RoleStudent], map[string]any{"name": "x", "language": "en"}).must(t, 403)

	// Another organization's ids are 404, for every verb.
	otherKey := other.keys[tenancy.RoleOwner]
	for _, req := range [][2]string{{"GET", "/exams/"}, {"PATCH", "/exams/"}, {"DELETE", "/exams/"}} {
		var body any
		if req[0] == "PATCH" {
			body = map[string]any{"name": "Stolen"}
		}
		e.do(req[0], req[1]+str(exam, "id"), otherKey, body).must(t, 404)
	}
	e.do("GET", "/folders/"+str(child, "id"), otherKey, nil).must(t, 404)
	e.do("POST", "/exams", otherKey, map[string]any{"name": "x", "language": "en", "folderId": child["id"]}).must(t, 400)
	e.do("GET", "/exams/"+str(exam, "id")+"/questions", otherKey, nil).must(t, 404)

	// Deleting: exam, then the now-empty folder; audit entries for each change.
	e.do("DELETE", "/exams/"+str(exam, "id"), teacher, nil).must(t, 200)
	e.do("GET", "/exams/"+str(exam, "id"), teacher, nil).must(t, 404)
	e.do("DELETE", "/folders/"+str(child, "id"), teacher, nil).must(t, 200)
	logs := items(e.do("GET", "/audit-logs?targetId="+str(exam, "id"), tn.keys[tenancy.RoleOwner], nil).must(t, 200).body, "auditLogs")
	var actions []string
	for _, l := range logs {
		actions = append(actions, str(l, "action"))
	}
	if !slices.Equal(actions, []string{"exam.deleted", "exam.updated", "exam.created"}) {
		t.Fatalf("exam audit actions %v", actions)
	}
	if logs := items(e.do("GET", "/audit-logs?action=folder.deleted", tn.keys[tenancy.RoleOwner], nil).must(t, 200).body, "auditLogs"); len(logs) != 1 {
		t.Fatalf("folder.deleted entries: %v", logs)
	}
}

func TestExamPaginationIsStable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	key := tn.keys[tenancy.RoleTeacher]
	var created []string
	for i := range 5 {
		created = append(created, str(e.do("POST", "/exams", key, map[string]any{"name": fmt.Sprintf("Exam %d", i), "language": "en"}).must(t, 200).body, "id"))
	}
	var seen []string
	token := ""
	for page := 0; ; page++ {
		body := e.do("GET", "/exams?pageSize=2&pageToken="+token, key, nil).must(t, 200).body
		for _, x := range items(body, "exams") {
			seen = append(seen, str(x, "id"))
		}
		if page == 0 { // an insert while paging appears once, at the end
			created = append(created, str(e.do("POST", "/exams", key, map[string]any{"name": "Late", "language": "en"}).must(t, 200).body, "id"))
		}
		if token = str(body, "nextPageToken"); token == "" {
			break
		}
	}
	if !slices.Equal(seen, created) {
		t.Fatalf("paged %v, want %v", seen, created)
	}
	if r := e.do("GET", "/exams?pageToken=garbage", key, nil).must(t, 400); r.field() != "pageToken" {
		t.Fatalf("bad token: %s", r.raw)
	}
}

// authoring creates an exam with one question of every built-in type.
type authoring struct {
	exam      string
	questions map[string]string // type key -> question id
}

func (e *env) authorAllTypes(t *testing.T, key string) authoring {
	t.Helper()
	a := authoring{questions: map[string]string{}}
	a.exam = str(e.do("POST", "/exams", key, map[string]any{"name": "Everything", "language": "en"}).must(t, 200).body, "id")
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
		body := e.do("POST", "/exams/"+a.exam+"/questions", key, q).must(t, 200).body
		a.questions[q["type"].(string)] = str(body, "id")
	}
	return a
}

func TestQuestionsScoringAndResults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	other := e.newTenant("DE", "pro")
	key := tn.keys[tenancy.RoleTeacher]
	a := e.authorAllTypes(t, key)
	base := "/exams/" + a.exam + "/questions"

	// Reading a question returns its resolved type definition.
	q := e.do("GET", base+"/"+a.questions["numeric"], key, nil).must(t, 200).body
	def, _ := q["typeDefinition"].(map[string]any)
	if def["key"] != "numeric" || def["builtIn"] != true || !strings.HasPrefix(str(def["responseProcessing"].(map[string]any), "condition"), "=") {
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
		r := e.do("POST", base, key, tc.body).must(t, 400)
		if !strings.HasPrefix(r.field(), tc.field) {
			t.Fatalf("%v: field %q, want %q (%s)", tc.body, r.field(), tc.field, r.raw)
		}
	}

	// Reorder: a permutation of every question; anything else is a 400.
	list := items(e.do("GET", base, key, nil).must(t, 200).body, "questions")
	var order []string
	for i := len(list) - 1; i >= 0; i-- {
		order = append(order, str(list[i], "id"))
	}
	e.do("POST", base+"/reorder", key, map[string]any{"questionIds": order[:3]}).must(t, 400)
	reordered := items(e.do("POST", base+"/reorder", key, map[string]any{"questionIds": order}).must(t, 200).body, "questions")
	if str(reordered[0], "id") != order[0] || num(reordered[0], "position") != 1 {
		t.Fatalf("reordered %v", reordered[0])
	}
	// Paging questions follows the order.
	page1 := e.do("GET", base+"?pageSize=4", key, nil).must(t, 200).body
	page2 := e.do("GET", base+"?pageSize=4&pageToken="+str(page1, "nextPageToken"), key, nil).must(t, 200).body
	if got := len(items(page1, "questions")) + len(items(page2, "questions")); got != 7 || str(items(page2, "questions")[0], "id") != order[4] {
		t.Fatalf("question pages: %v %v", page1, page2)
	}

	// Submit: rule-scored answers are scored now, AI-graded ones pending.
	student := tn.users[tenancy.RoleStudent].ID
	res := e.do("POST", "/exams/"+a.exam+"/results", key, map[string]any{"userId": student, "answers": []any{
		map[string]any{"questionId": a.questions["multiple_choice"], "value": "b"},
		map[string]any{"questionId": a.questions["multiple_select"], "value": []any{"b", "a"}},
		map[string]any{"questionId": a.questions["true_false"], "value": false},
		map[string]any{"questionId": a.questions["short_text"], "value": "  paris "},
		map[string]any{"questionId": a.questions["numeric"], "value": 3.149},
		map[string]any{"questionId": a.questions["essay"], "value": "Plants use light."},
		map[string]any{"questionId": a.questions["file_upload"], "value": "report", "files": []any{"https://cdn.example.com/r.pdf"}},
	}}).must(t, 200).body
	if res["status"] != "grading" || num(res, "score") != 5 || num(res, "maxScore") != 16 {
		t.Fatalf("result %s", e.do("GET", "/results/"+str(res, "id"), key, nil).raw)
	}
	want := map[string][2]any{ // question -> status, score
		a.questions["multiple_choice"]: {"graded", 2.0}, a.questions["multiple_select"]: {"graded", 1.0},
		a.questions["true_false"]: {"graded", 0.0}, a.questions["short_text"]: {"graded", 1.0},
		a.questions["numeric"]: {"graded", 1.0}, a.questions["essay"]: {"pending", 0.0}, a.questions["file_upload"]: {"pending", 0.0},
	}
	for _, ans := range items(res, "answers") {
		if w := want[str(ans, "questionId")]; ans["status"] != w[0] || num(ans, "score") != w[1] {
			t.Fatalf("answer %v, want %v", ans, w)
		}
	}
	// Only rule-scored questions: graded at once; wrong answers score 0.
	rulesOnly := e.do("POST", "/exams", key, map[string]any{"name": "Rules", "language": "en"}).must(t, 200).body
	tf := str(e.do("POST", "/exams/"+str(rulesOnly, "id")+"/questions", key, map[string]any{"type": "numeric", "prompt": "What is 7 times 6?",
		"config": map[string]any{"correct": 42}}).must(t, 200).body, "id")
	r2 := e.do("POST", "/exams/"+str(rulesOnly, "id")+"/results", key, map[string]any{"userId": student, "answers": []any{
		map[string]any{"questionId": tf, "value": "42"}}}).must(t, 200).body
	if r2["status"] != "graded" || num(r2, "score") != 0 {
		t.Fatalf("string for a number: %v", r2)
	}

	// Bad submissions are 400s naming the field.
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"userId": student, "answers": []any{map[string]any{"questionId": tf, "value": 1}}}, "answers.0.questionId"},
		{map[string]any{"userId": student, "answers": []any{map[string]any{"questionId": a.questions["essay"], "value": "x", "files": []any{"not a url"}}}}, "answers.0.files.0"},
		{map[string]any{"userId": other.users[tenancy.RoleStudent].ID}, "userId"},
		// The question takes two files; a file listed twice is refused too.
		{map[string]any{"userId": student, "answers": []any{map[string]any{"questionId": a.questions["file_upload"],
			"files": []any{"https://cdn.example.com/1.pdf", "https://cdn.example.com/2.pdf", "https://cdn.example.com/3.pdf"}}}}, "answers.0.files"},
		{map[string]any{"userId": student, "answers": []any{map[string]any{"questionId": a.questions["essay"], "value": "x",
			"files": []any{"https://cdn.example.com/r.pdf", "https://cdn.example.com/r.pdf"}}}}, "answers.0.files.1"},
	} {
		if r := e.do("POST", "/exams/"+a.exam+"/results", key, tc.body).must(t, 400); r.field() != tc.field {
			t.Fatalf("field %q, want %q: %s", r.field(), tc.field, r.raw)
		}
	}

	// Reads: by id on both paths, lists with filters; students see their own only.
	e.do("GET", "/exams/"+a.exam+"/results/"+str(res, "id"), key, nil).must(t, 200)
	e.do("GET", "/exams/"+a.exam+"/results/summary", key, nil).must(t, 200)
	e.do("GET", "/exams/"+str(rulesOnly, "id")+"/results/"+str(res, "id"), key, nil).must(t, 404)
	if l := items(e.do("GET", "/exams/"+a.exam+"/results?status=grading&userId="+student, key, nil).must(t, 200).body, "results"); len(l) != 1 {
		t.Fatalf("filtered results %v", l)
	}
	if l := items(e.do("GET", "/exams/"+a.exam+"/results?status=graded", key, nil).must(t, 200).body, "results"); len(l) != 0 {
		t.Fatalf("graded results %v", l)
	}
	e.do("GET", "/results/"+str(res, "id"), tn.keys[tenancy.RoleStudent], nil).must(t, 200)
	e.do("GET", "/results/"+str(res, "id"), other.keys[tenancy.RoleOwner], nil).must(t, 404)
	e.do("GET", "/exams/"+a.exam+"/results", other.keys[tenancy.RoleOwner], nil).must(t, 404)
	e.do("GET", base+"/"+a.questions["essay"], other.keys[tenancy.RoleOwner], nil).must(t, 404)

	// Deleting a question closes the gap; audit entries exist.
	e.do("DELETE", base+"/"+order[0], key, nil).must(t, 200)
	after := items(e.do("GET", base, key, nil).must(t, 200).body, "questions")
	if len(after) != 6 || num(after[0], "position") != 1 || str(after[0], "id") != order[1] {
		t.Fatalf("after delete %v", after)
	}
	for _, action := range []string{"question.created", "question.deleted", "exam.questions_reordered"} {
		if l := items(e.do("GET", "/audit-logs?action="+action, tn.keys[tenancy.RoleOwner], nil).must(t, 200).body, "auditLogs"); len(l) == 0 {
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
	e := newEnv(t)
	owner := e.newTenant("US", "pro")
	user := e.newTenant("FR", "pro")
	late := e.newTenant("DE", "pro")
	ok, uk, lk := owner.keys[tenancy.RoleTeacher], user.keys[tenancy.RoleTeacher], late.keys[tenancy.RoleTeacher]

	typ := e.do("POST", "/question-types", ok, customType("word_count", true)).must(t, 200).body
	id := str(typ, "id")
	e.do("POST", "/question-types", ok, customType("word_count", true)).must(t, 409)
	private := str(e.do("POST", "/question-types", ok, customType("secret", false)).must(t, 200).body, "id")

	// Discovery lists other organizations' public types only.
	disc := items(e.do("GET", "/question-types/discover", uk, nil).must(t, 200).body, "questionTypes")
	if len(disc) != 1 || str(disc[0], "id") != id || disc[0]["enabled"] != false {
		t.Fatalf("discover %v", disc)
	}
	e.do("GET", "/question-types/"+private, uk, nil).must(t, 404)
	e.do("POST", "/question-types/"+private+"/enable", uk, map[string]any{}).must(t, 404)
	e.do("PATCH", "/question-types/"+id, uk, map[string]any{"name": "Hijacked"}).must(t, 404)

	// Not enabled yet: no questions of it.
	userExam := str(e.do("POST", "/exams", uk, map[string]any{"name": "Writing", "language": "fr"}).must(t, 200).body, "id")
	newQ := map[string]any{"type": id, "prompt": "Describe Paris in three words.", "config": map[string]any{"words": 3}}
	if r := e.do("POST", "/exams/"+userExam+"/questions", uk, newQ).must(t, 400); r.reason() != "QUESTION_TYPE_NOT_ENABLED" {
		t.Fatalf("not enabled: %s", r.raw)
	}
	if en := e.do("POST", "/question-types/"+id+"/enable", uk, map[string]any{}).must(t, 200).body; en["enabled"] != true {
		t.Fatalf("enable %v", en)
	}
	if l := items(e.do("GET", "/question-types/discover", uk, nil).must(t, 200).body, "questionTypes"); len(l) != 0 {
		t.Fatalf("an enabled type is still discoverable: %v", l)
	}
	userQ := str(e.do("POST", "/exams/"+userExam+"/questions", uk, newQ).must(t, 200).body, "id")
	if r := e.do("POST", "/exams/"+userExam+"/questions", uk, map[string]any{"type": id, "prompt": "a b c", "config": map[string]any{"words": 0}}).must(t, 400); r.field() != "config.words" {
		t.Fatalf("custom config validation: %s", r.raw)
	}
	student := user.users[tenancy.RoleStudent].ID
	res := e.do("POST", "/exams/"+userExam+"/results", uk, map[string]any{"userId": student, "answers": []any{
		map[string]any{"questionId": userQ, "value": "big old city"}}}).must(t, 200).body
	if num(res, "score") != 1 || res["status"] != "graded" {
		t.Fatalf("custom type scoring: %v", res)
	}

	// The owner deprecates: existing questions keep rendering and grading,
	// no new ones, and organizations that have not enabled it cannot
	// discover or enable it any more.
	ownerExam := str(e.do("POST", "/exams", ok, map[string]any{"name": "Own", "language": "en"}).must(t, 200).body, "id")
	ownerQ := str(e.do("POST", "/exams/"+ownerExam+"/questions", ok, newQ).must(t, 200).body, "id")
	e.do("PATCH", "/question-types/"+id, ok, map[string]any{"deprecated": true}).must(t, 200)
	if q := e.do("GET", "/exams/"+userExam+"/questions/"+userQ, uk, nil).must(t, 200).body; q["typeDefinition"] == nil {
		t.Fatalf("deprecated type stopped rendering: %v", q)
	}
	if r := e.do("POST", "/exams/"+userExam+"/results", uk, map[string]any{"userId": student, "answers": []any{
		map[string]any{"questionId": userQ, "value": "one two three"}}}).must(t, 200).body; num(r, "score") != 1 {
		t.Fatalf("deprecated type stopped grading: %v", r)
	}
	for _, k := range []string{uk, ok} {
		exam := userExam
		if k == ok {
			exam = ownerExam
		}
		if r := e.do("POST", "/exams/"+exam+"/questions", k, newQ).must(t, 400); r.reason() != "QUESTION_TYPE_DEPRECATED" {
			t.Fatalf("new question of a deprecated type: %s", r.raw)
		}
	}
	if l := items(e.do("GET", "/question-types/discover", lk, nil).must(t, 200).body, "questionTypes"); len(l) != 0 {
		t.Fatalf("deprecated type discoverable: %v", l)
	}
	if r := e.do("POST", "/question-types/"+id+"/enable", lk, map[string]any{}).must(t, 400); r.reason() != "QUESTION_TYPE_DEPRECATED" {
		t.Fatalf("enable deprecated: %s", r.raw)
	}
	// An organization that already enabled it keeps it enabled.
	e.do("POST", "/question-types/"+id+"/enable", uk, map[string]any{}).must(t, 200)

	// The owner makes it private: other organizations' questions stop
	// rendering, explicitly; the owner is unaffected.
	e.do("PATCH", "/question-types/"+id, ok, map[string]any{"public": false, "deprecated": false}).must(t, 200)
	q := e.do("GET", "/exams/"+userExam+"/questions/"+userQ, uk, nil).must(t, 200).body
	st, _ := q["typeStatus"].(map[string]any)
	if q["typeDefinition"] != nil || st["state"] != "FAILED_PRECONDITION" || st["reason"] != "QUESTION_TYPE_UNAVAILABLE" {
		t.Fatalf("private type still resolves elsewhere: %v", q)
	}
	if l := items(e.do("GET", "/exams/"+userExam+"/questions", uk, nil).must(t, 200).body, "questions"); len(l) != 1 {
		t.Fatalf("unresolvable question dropped from the list: %v", l)
	}
	if r := e.do("POST", "/exams/"+userExam+"/results", uk, map[string]any{"userId": student, "answers": []any{
		map[string]any{"questionId": userQ, "value": "one two three"}}}).must(t, 200).body; r["status"] != "failed" {
		t.Fatalf("unresolvable question graded: %v", r)
	}
	if q := e.do("GET", "/exams/"+ownerExam+"/questions/"+ownerQ, ok, nil).must(t, 200).body; q["typeDefinition"] == nil {
		t.Fatalf("owner's question stopped rendering: %v", q)
	}
	e.do("GET", "/question-types/"+id, uk, nil).must(t, 404)
	var actions []string
	for _, entry := range items(e.do("GET", "/audit-logs?targetId="+id, owner.keys[tenancy.RoleOwner], nil).must(t, 200).body, "auditLogs") {
		actions = append(actions, str(entry, "action"))
	}
	if got := strings.Join(actions, " "); got != "question_type.made_private question_type.updated question_type.deprecated question_type.updated question_type.created" {
		t.Fatalf("question type audit entries, newest first: %s", got)
	}
}

func TestQuestionTypeExpressionsAreValidated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	key := tn.keys[tenancy.RoleTeacher]
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
			r := e.do("POST", "/question-types", key, b).must(t, 400)
			if r.field() != tc.field || !strings.Contains(str(r.body, "message"), tc.says) {
				t.Fatalf("field %q message %q", r.field(), str(r.body, "message"))
			}
		})
	}
	ai := customType("ai_report", false)
	delete(ai, "responseProcessing")
	ai["grading"] = map[string]any{"enabled": true, "fileInputs": "=answer.files"}
	got := e.do("POST", "/question-types", key, ai).must(t, 200).body
	if g := got["grading"].(map[string]any); g["fileInputs"] != "=answer.files" || g["enabled"] != true {
		t.Fatalf("grading %v", g)
	}
	// PATCH validates too, and an invalid patch changes nothing.
	id := str(got, "id")
	e.do("PATCH", "/question-types/"+id, key, map[string]any{"grading": map[string]any{"fileInputs": "=("}}).must(t, 400)
	if g := e.do("GET", "/question-types/"+id, key, nil).must(t, 200).body["grading"].(map[string]any); g["fileInputs"] != "=answer.files" {
		t.Fatalf("invalid patch changed the type: %v", g)
	}
}

func TestResultsSummaryMath(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	key := tn.keys[tenancy.RoleTeacher]
	exam := str(e.do("POST", "/exams", key, map[string]any{"name": "Stats", "language": "en"}).must(t, 200).body, "id")
	q1 := str(e.do("POST", "/exams/"+exam+"/questions", key, map[string]any{"type": "true_false", "prompt": "Water boils at 100 C at sea level.", "config": map[string]any{"correct": true}}).must(t, 200).body, "id")
	q2 := str(e.do("POST", "/exams/"+exam+"/questions", key, map[string]any{"type": "numeric", "prompt": "What is 6 times 7?", "points": 3, "config": map[string]any{"correct": 42}}).must(t, 200).body, "id")
	// Four students: (q1, q2) right/wrong -> totals 4, 1, 3, 0 of 4.
	answers := [][2]any{{true, 42}, {true, 1}, {false, 42}, {false, 0}}
	for _, a := range answers {
		e.do("POST", "/exams/"+exam+"/results", key, map[string]any{"userId": tn.users[tenancy.RoleStudent].ID, "answers": []any{
			map[string]any{"questionId": q1, "value": a[0]}, map[string]any{"questionId": q2, "value": a[1]}}}).must(t, 200)
	}
	s := e.do("GET", "/exams/"+exam+"/results/summary", key, nil).must(t, 200).body
	// Scores 4, 1, 3, 0: mean 2, median 2, population sd sqrt(2.5).
	if num(s, "count") != 4 || num(s, "gradedCount") != 4 || num(s, "mean") != 2 || num(s, "median") != 2 ||
		math.Abs(num(s, "stdDev")-math.Sqrt(2.5)) > 1e-9 || num(s, "min") != 0 || num(s, "max") != 4 {
		t.Fatalf("summary %v", s)
	}
	hist := items(s, "histogram")
	counts := make([]float64, len(hist))
	for i, b := range hist {
		counts[i] = num(b, "count")
	}
	// 0% -> bucket 0, 25% -> 2, 75% -> 7, 100% -> 9 (the last bucket is closed).
	if !slices.Equal(counts, []float64{1, 0, 1, 0, 0, 0, 0, 1, 0, 1}) {
		t.Fatalf("histogram %v", counts)
	}
	qs := items(s, "questions")
	if len(qs) != 2 || str(qs[0], "questionId") != q1 || num(qs[0], "difficulty") != 0.5 || num(qs[1], "meanScore") != 1.5 {
		t.Fatalf("question stats %v", qs)
	}
	// q1 item scores 1,1,0,0 against rest scores 3,0,3,0: uncorrelated.
	// q2 item scores 3,0,3,0 against rest 1,1,0,0: also 0.
	for _, q := range qs {
		if d, ok := q["discrimination"].(float64); !ok || math.Abs(d) > 1e-9 {
			t.Fatalf("discrimination %v", q)
		}
	}
	e.do("GET", "/exams/"+exam+"/results/summary", tn.keys[tenancy.RoleStudent], nil).must(t, 403)
	e.do("GET", "/exams/"+exam+"/results/summary", e.newTenant("FR", "pro").keys[tenancy.RoleOwner], nil).must(t, 404)
}

func TestQuestionQuality(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("US", "pro")
	key := tn.keys[tenancy.RoleTeacher]
	exam := str(e.do("POST", "/exams", key, map[string]any{"name": "Quality", "language": "en"}).must(t, 200).body, "id")
	bad := str(e.do("POST", "/exams/"+exam+"/questions", key, map[string]any{"type": "multiple_choice",
		"prompt": "Which of the following is not usually a mammal?",
		"config": map[string]any{"options": []any{
			map[string]any{"id": "a", "text": "Whale", "correct": true},
			map[string]any{"id": "b", "text": "Whale.", "correct": true},
			map[string]any{"id": "c", "text": "Dolphins"},
			map[string]any{"id": "d", "text": "Dolphin"},
			map[string]any{"id": "e", "text": "All of the above"}}}}).must(t, 200).body, "id")
	r := e.do("GET", "/exams/"+exam+"/questions/"+bad+"/quality", key, nil).must(t, 200).body
	codes := map[string]string{}
	for _, f := range items(r, "findings") {
		codes[str(f, "code")] = str(f, "field")
	}
	for code, field := range map[string]string{"NEGATIVE_STEM": "prompt", "AMBIGUOUS_STEM": "prompt", "DUPLICATE_OPTIONS": "config.options.1.text",
		"NEAR_DUPLICATE_OPTIONS": "config.options.3.text", "ALL_NONE_OF_THE_ABOVE": "config.options.4.text", "MULTIPLE_CORRECT_OPTIONS": "config.options"} {
		if got, ok := codes[code]; !ok || got != field {
			t.Fatalf("finding %s (field %q) missing: %v", code, field, codes)
		}
	}
	if num(r, "score") >= 50 || r["statistics"] != nil {
		t.Fatalf("quality %v", r)
	}
	good := str(e.do("POST", "/exams/"+exam+"/questions", key, map[string]any{"type": "true_false",
		"prompt": "Water boils at 100 degrees Celsius at sea level.", "config": map[string]any{"correct": true}}).must(t, 200).body, "id")
	// Everyone answers the same: the item does not discriminate.
	for range 5 {
		e.do("POST", "/exams/"+exam+"/results", key, map[string]any{"userId": tn.users[tenancy.RoleStudent].ID, "answers": []any{
			map[string]any{"questionId": good, "value": true}}}).must(t, 200)
	}
	r = e.do("GET", "/exams/"+exam+"/questions/"+good+"/quality", key, nil).must(t, 200).body
	stats, _ := r["statistics"].(map[string]any)
	if stats == nil || num(stats, "responses") != 5 || num(stats, "difficulty") != 1 {
		t.Fatalf("statistics %v", r)
	}
	found := false
	for _, f := range items(r, "findings") {
		found = found || f["code"] == "NO_DISCRIMINATION"
	}
	if !found {
		t.Fatalf("no NO_DISCRIMINATION finding: %v", r)
	}
}
