package app_test

import (
	"net/http"
	"testing"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/tenancy"
)

// TestQuestionTypeContract covers API.md's question type points: the list
// holds the built-in types first, questions name a type by the
// organization's own key, configSchema is optional, and a deprecated
// type is not readable by id where it was never enabled.
func TestQuestionTypeContract(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	owner, user, late := e.newTenant("US", "pro"), e.newTenant("FR", "pro"), e.newTenant("DE", "pro")
	ok := owner.keys[tenancy.RoleTeacher]

	// No configSchema: any configuration object.
	typ := e.do("POST", "/question-types", ok, map[string]any{"key": "open_answer", "name": "Open answer", "public": true,
		"responseProcessing": map[string]any{"condition": `=answer.value = "yes"`}}).must(t, http.StatusOK).body
	id := str(typ, "id")
	if toJSON(typ["configSchema"]) != `{"type":"object"}` {
		t.Fatalf("default configSchema = %v", typ["configSchema"])
	}

	// A question names the type by key.
	exam := str(e.do("POST", "/exams", ok, map[string]any{"name": "Keys", "language": "en"}).must(t, http.StatusOK).body, "id")
	q := e.do("POST", "/exams/"+exam+"/questions", ok, map[string]any{"type": "open_answer", "prompt": "Say yes.", "config": map[string]any{"anything": []any{1, 2}}}).must(t, http.StatusOK).body
	if q["type"] != id {
		t.Fatalf("question created by key has type %v, want %s", q["type"], id)
	}
	if r := e.do("POST", "/exams/"+exam+"/questions", ok, map[string]any{"type": "no_such_key", "prompt": "Say yes.", "config": map[string]any{}}).must(t, http.StatusBadRequest); r.field() != "type" {
		t.Fatalf("unknown key: %s", r.raw)
	}
	// Another organization's key is not ours to name.
	uk := user.keys[tenancy.RoleTeacher]
	userExam := str(e.do("POST", "/exams", uk, map[string]any{"name": "Keys", "language": "fr"}).must(t, http.StatusOK).body, "id")
	e.do("POST", "/exams/"+userExam+"/questions", uk, map[string]any{"type": "open_answer", "prompt": "Say yes.", "config": map[string]any{}}).must(t, http.StatusBadRequest)

	// The list: built-ins first, then the organization's own, page by page.
	var seen []string
	token := ""
	for range 10 {
		r := e.do("GET", "/question-types?pageSize=3&pageToken="+token, ok, nil).must(t, http.StatusOK).body
		for _, it := range items(r, "questionTypes") {
			ref := str(it, "id")
			if ref == "" {
				ref = str(it, "key")
			}
			seen = append(seen, ref)
		}
		if token = str(r, "nextPageToken"); token == "" {
			break
		}
	}
	want := append(assessment.BuiltinKeys(), id)
	if toJSON(seen) != toJSON(want) {
		t.Fatalf("listed %v, want %v", seen, want)
	}

	// Deprecated: the owner and an organization that enabled it still read
	// it by id; one that never enabled it gets 404.
	e.do("POST", "/question-types/"+id+"/enable", uk, map[string]any{}).must(t, http.StatusOK)
	e.do("GET", "/question-types/"+id, late.keys[tenancy.RoleTeacher], nil).must(t, http.StatusOK)
	e.do("PATCH", "/question-types/"+id, ok, map[string]any{"deprecated": true}).must(t, http.StatusOK)
	e.do("GET", "/question-types/"+id, ok, nil).must(t, http.StatusOK)
	e.do("GET", "/question-types/"+id, uk, nil).must(t, http.StatusOK)
	e.do("GET", "/question-types/"+id, late.keys[tenancy.RoleTeacher], nil).must(t, http.StatusNotFound)
}
