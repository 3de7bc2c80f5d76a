package app_test

import (
	"net/http"
	"testing"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

// TestQuestionTypeContract covers API.md's question type points: the list
// holds the built-in types first, questions name a type by the
// organization's own key, configSchema is optional, and a deprecated
// type is not readable by id where it was never enabled.
func TestQuestionTypeContract(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	owner, user, late := e.NewTenant("US", "pro"), e.NewTenant("FR", "pro"), e.NewTenant("DE", "pro")
	ok := owner.Keys[tenancy.RoleTeacher]

	// No configSchema: any configuration object.
	typ := e.Do("POST", "/question-types", ok, map[string]any{"key": "open_answer", "name": "Open answer", "public": true,
		"responseProcessing": map[string]any{"condition": `=answer.value = "yes"`}}).Must(t, http.StatusOK).Body
	id := apptest.Str(typ, "id")
	if apptest.JSON(typ["configSchema"]) != `{"type":"object"}` {
		t.Fatalf("default configSchema = %v", typ["configSchema"])
	}

	// A question names the type by key.
	exam := apptest.Str(e.Do("POST", "/exams", ok, map[string]any{"name": "Keys", "language": "en"}).Must(t, http.StatusOK).Body, "id")
	q := e.Do("POST", "/exams/"+exam+"/questions", ok, map[string]any{"type": "open_answer", "prompt": "Say yes.", "config": map[string]any{"anything": []any{1, 2}}}).Must(t, http.StatusOK).Body
	if q["type"] != id {
		t.Fatalf("question created by key has type %v, want %s", q["type"], id)
	}
	if r := e.Do("POST", "/exams/"+exam+"/questions", ok, map[string]any{"type": "no_such_key", "prompt": "Say yes.", "config": map[string]any{}}).Must(t, http.StatusBadRequest); r.Field() != "type" {
		t.Fatalf("unknown key: %s", r.Raw)
	}
	// Another organization's key is not ours to name.
	uk := user.Keys[tenancy.RoleTeacher]
	userExam := apptest.Str(e.Do("POST", "/exams", uk, map[string]any{"name": "Keys", "language": "fr"}).Must(t, http.StatusOK).Body, "id")
	e.Do("POST", "/exams/"+userExam+"/questions", uk, map[string]any{"type": "open_answer", "prompt": "Say yes.", "config": map[string]any{}}).Must(t, http.StatusBadRequest)

	// The list: built-ins first, then the organization's own, page by page.
	var seen []string
	token := ""
	for range 10 {
		r := e.Do("GET", "/question-types?pageSize=3&pageToken="+token, ok, nil).Must(t, http.StatusOK).Body
		for _, it := range apptest.Items(r, "questionTypes") {
			ref := apptest.Str(it, "id")
			if ref == "" {
				ref = apptest.Str(it, "key")
			}
			seen = append(seen, ref)
		}
		if token = apptest.Str(r, "nextPageToken"); token == "" {
			break
		}
	}
	want := append(assessment.BuiltinKeys(), id)
	if apptest.JSON(seen) != apptest.JSON(want) {
		t.Fatalf("listed %v, want %v", seen, want)
	}

	// Deprecated: the owner and an organization that enabled it still read
	// it by id; one that never enabled it gets 404.
	e.Do("POST", "/question-types/"+id+"/enable", uk, map[string]any{}).Must(t, http.StatusOK)
	e.Do("GET", "/question-types/"+id, late.Keys[tenancy.RoleTeacher], nil).Must(t, http.StatusOK)
	e.Do("PATCH", "/question-types/"+id, ok, map[string]any{"deprecated": true}).Must(t, http.StatusOK)
	e.Do("GET", "/question-types/"+id, ok, nil).Must(t, http.StatusOK)
	e.Do("GET", "/question-types/"+id, uk, nil).Must(t, http.StatusOK)
	e.Do("GET", "/question-types/"+id, late.Keys[tenancy.RoleTeacher], nil).Must(t, http.StatusNotFound)
}
