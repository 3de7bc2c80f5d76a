package app_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/tenancy"
)

// outcome is what a table test compares of an answer: the status, and for
// an error its ErrorInfo reason and first field violation.
type outcome struct {
	Status int
	Reason string
	Field  string
}

func outcomeOf(r response) outcome {
	o := outcome{Status: r.Status}
	if r.Status >= 400 {
		o.Reason, o.Field = r.Reason(), r.Field()
	}
	return o
}

// decode decodes the raw body of r into a value of type T.
func decode[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.Raw, &v); err != nil {
		t.Fatalf("decode %s: %v", r.Raw, err)
	}
	return v
}

type folderJSON struct {
	ID       string `json:"id"`
	ParentID string `json:"parentId"`
	Name     string `json:"name"`
}

type folderPage struct {
	Folders       []folderJSON `json:"folders"`
	NextPageToken string       `json:"nextPageToken"`
}

func sortedNames(fs []folderJSON) []string {
	var names []string
	for _, f := range fs {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

// TestListFolders covers GET /folders: the parent filter at every depth,
// pagination, other organizations' folders (never listed, and a foreign
// parent filters to nothing) and bad input.
func TestListFolders(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn, other := e.NewTenant("FR", "pro"), e.NewTenant("US", "pro")
	teacher := tn.Keys[tenancy.RoleTeacher]
	ids := map[string]string{}
	create := func(key, name, parent string) {
		body := map[string]any{"name": name}
		if parent != "" {
			body["parentId"] = ids[parent]
		}
		ids[name] = decode[folderJSON](t, e.Do("POST", "/folders", key, body).Must(t, 200)).ID
	}
	create(teacher, "Year 7", "")
	create(teacher, "Year 8", "")
	create(teacher, "Maths", "Year 7")
	create(teacher, "Science", "Year 7")
	create(teacher, "Algebra", "Maths")
	create(other.Keys[tenancy.RoleTeacher], "Foreign", "")

	for _, tc := range []struct {
		name  string
		key   string
		query url.Values
		want  outcome
		names []string
	}{
		{"every folder", teacher, nil, outcome{Status: 200}, []string{"Algebra", "Maths", "Science", "Year 7", "Year 8"}},
		{"top level", teacher, url.Values{"parentId": {"root"}}, outcome{Status: 200}, []string{"Year 7", "Year 8"}},
		{"children", teacher, url.Values{"parentId": {ids["Year 7"]}}, outcome{Status: 200}, []string{"Maths", "Science"}},
		{"grandchildren", teacher, url.Values{"parentId": {ids["Maths"]}}, outcome{Status: 200}, []string{"Algebra"}},
		{"a leaf", teacher, url.Values{"parentId": {ids["Algebra"]}}, outcome{Status: 200}, nil},
		{"a student reads", tn.Keys[tenancy.RoleStudent], url.Values{"parentId": {"root"}}, outcome{Status: 200}, []string{"Year 7", "Year 8"}},
		{"the other organization sees its own only", other.Keys[tenancy.RoleTeacher], nil, outcome{Status: 200}, []string{"Foreign"}},
		{"a foreign parent filters to nothing", teacher, url.Values{"parentId": {ids["Foreign"]}}, outcome{Status: 200}, nil},
		{"own parent seen by the other organization", other.Keys[tenancy.RoleTeacher], url.Values{"parentId": {ids["Year 7"]}}, outcome{Status: 200}, nil},
		{"malformed parent", teacher, url.Values{"parentId": {"exm_nope"}}, outcome{Status: 400, Reason: "INVALID_ARGUMENT", Field: "parentId"}, nil},
		{"page size too large", teacher, url.Values{"pageSize": {"201"}}, outcome{Status: 400, Reason: "INVALID_PAGE_SIZE", Field: "pageSize"}, nil},
		{"forged page token", teacher, url.Values{"pageToken": {"not-a-token"}}, outcome{Status: 400, Reason: "INVALID_PAGE_TOKEN", Field: "pageToken"}, nil},
		{"no credentials", "", nil, outcome{Status: 401, Reason: "UNAUTHENTICATED"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.Do("GET", "/folders?"+tc.query.Encode(), tc.key, nil)
			if diff := cmp.Diff(tc.want, outcomeOf(r)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s\nbody %s", diff, r.Raw)
			}
			if r.Status != 200 {
				return
			}
			page := decode[folderPage](t, r)
			if diff := cmp.Diff(tc.names, sortedNames(page.Folders)); diff != "" || page.NextPageToken != "" {
				t.Fatalf("folders (-want +got):\n%s\nnextPageToken %q", diff, page.NextPageToken)
			}
		})
	}

	t.Run("pages", func(t *testing.T) {
		var got []folderJSON
		token := ""
		for pages := 1; ; pages++ {
			q := url.Values{"pageSize": {"2"}}
			if token != "" {
				q.Set("pageToken", token)
			}
			page := decode[folderPage](t, e.Do("GET", "/folders?"+q.Encode(), teacher, nil).Must(t, 200))
			if len(page.Folders) > 2 || pages > 3 {
				t.Fatalf("page %d has %d folders", pages, len(page.Folders))
			}
			got = append(got, page.Folders...)
			if token = page.NextPageToken; token == "" {
				break
			}
		}
		want := []folderJSON{
			{ids["Year 7"], "", "Year 7"}, {ids["Year 8"], "", "Year 8"}, {ids["Maths"], ids["Year 7"], "Maths"},
			{ids["Science"], ids["Year 7"], "Science"}, {ids["Algebra"], ids["Maths"], "Algebra"},
		}
		// Pages come in id order, which is creation order.
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("paged folders (-want +got):\n%s", diff)
		}
	})
}

type generationJSON struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	ExamID string `json:"examId"`
	Error  string `json:"error"`
	Region string `json:"region"`
}

// TestExamGenerationsOverHTTP covers POST /exam-generations and GET
// /exam-generations/{id}: a request is stored as running on the
// organization's region (the workflow starts from the outbox, so no
// Temporal is needed here), bad input is a 400 naming the field, and
// another organization's id is a 404.
func TestExamGenerationsOverHTTP(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	eu, us := e.NewTenant("FR", "pro"), e.NewTenant("US", "pro")
	teacher := eu.Keys[tenancy.RoleTeacher]

	for _, tc := range []struct {
		name string
		key  string
		body any
		want outcome
		gen  generationJSON // compared without its id
	}{
		{"minimal", teacher, map[string]any{"subject": "Volcanoes"}, outcome{Status: 200}, generationJSON{Status: "running", Region: "eu"}},
		{"everything", teacher, map[string]any{"subject": "Fractions", "studentLevel": "grade 5", "durationMinutes": 20, "taxonomy": "bloom",
			"questionTypes": []any{"multiple_choice", "numeric"}, "language": "fr", "count": 4}, outcome{Status: 200}, generationJSON{Status: "running", Region: "eu"}},
		{"global organization", us.Keys[tenancy.RoleTeacher], map[string]any{"subject": "Volcanoes"}, outcome{Status: 200}, generationJSON{Status: "running", Region: "global"}},
		{"no subject", teacher, map[string]any{"studentLevel": "grade 5"}, outcome{Status: 400, Reason: "INVALID_ARGUMENT", Field: "subject"}, generationJSON{}},
		{"blank subject", teacher, map[string]any{"subject": "   "}, outcome{Status: 400, Reason: "INVALID_ARGUMENT", Field: "subject"}, generationJSON{}},
		{"duration out of range", teacher, map[string]any{"subject": "x", "durationMinutes": 601}, outcome{Status: 400, Reason: "INVALID_ARGUMENT", Field: "durationMinutes"}, generationJSON{}},
		{"count out of range", teacher, map[string]any{"subject": "x", "count": -1}, outcome{Status: 400, Reason: "INVALID_ARGUMENT", Field: "count"}, generationJSON{}},
		{"bad language", teacher, map[string]any{"subject": "x", "language": "english!"}, outcome{Status: 400, Reason: "INVALID_ARGUMENT", Field: "language"}, generationJSON{}},
		{"ungeneratable type", teacher, map[string]any{"subject": "x", "questionTypes": []any{"file_upload"}}, outcome{Status: 400, Reason: "INVALID_ARGUMENT", Field: "questionTypes"}, generationJSON{}},
		{"wrong field type", teacher, map[string]any{"subject": 7}, outcome{Status: 400, Reason: "INVALID_BODY", Field: "subject"}, generationJSON{}},
		{"unknown field", teacher, map[string]any{"subject": "x", "topic": "y"}, outcome{Status: 400, Reason: "INVALID_BODY", Field: "topic"}, generationJSON{}},
		{"malformed JSON", teacher, `{"subject": `, outcome{Status: 400, Reason: "INVALID_BODY"}, generationJSON{}},
		{"a student", eu.Keys[tenancy.RoleStudent], map[string]any{"subject": "x"}, outcome{Status: 403, Reason: "INSUFFICIENT_SCOPE"}, generationJSON{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.Do("POST", "/exam-generations", tc.key, tc.body)
			if diff := cmp.Diff(tc.want, outcomeOf(r)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s\nbody %s", diff, r.Raw)
			}
			if r.Status != 200 {
				return
			}
			created := decode[generationJSON](t, r)
			read := decode[generationJSON](t, e.Do("GET", "/exam-generations/"+created.ID, tc.key, nil).Must(t, 200))
			if diff := cmp.Diff(created, read); diff != "" {
				t.Fatalf("read back (-created +read):\n%s", diff)
			}
			id := created.ID
			created.ID = ""
			if diff := cmp.Diff(tc.gen, created); diff != "" || !strings.HasPrefix(id, "gen_") {
				t.Fatalf("generation (-want +got):\n%s\nid %q", diff, id)
			}
		})
	}

	own := decode[generationJSON](t, e.Do("POST", "/exam-generations", teacher, map[string]any{"subject": "Rivers"}).Must(t, 200)).ID
	for _, tc := range []struct {
		name, key, id string
		want          outcome
	}{
		{"own", teacher, own, outcome{Status: 200}},
		{"foreign id", us.Keys[tenancy.RoleTeacher], own, outcome{Status: 404, Reason: "EXAM_GENERATION_NOT_FOUND"}},
		{"unknown id", teacher, "gen_01ARZ3NDEKTSV4RRFFQ69G5FAV", outcome{Status: 404, Reason: "EXAM_GENERATION_NOT_FOUND"}},
		{"not a generation id", teacher, "exm_01ARZ3NDEKTSV4RRFFQ69G5FAV", outcome{Status: 400, Reason: "INVALID_ARGUMENT", Field: "id"}},
	} {
		t.Run("GET "+tc.name, func(t *testing.T) {
			r := e.Do("GET", "/exam-generations/"+tc.id, tc.key, nil)
			if diff := cmp.Diff(tc.want, outcomeOf(r)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s\nbody %s", diff, r.Raw)
			}
		})
	}
}

type questionJSON struct {
	Type   string         `json:"type"`
	Prompt string         `json:"prompt"`
	Points float64        `json:"points"`
	Config map[string]any `json:"config"`
}

// TestUpdateQuestion covers PATCH /exams/{examId}/questions/{questionId}:
// absent fields keep their value, config is replaced whole and validated
// against the (possibly new) type's schema, with a 400 naming the field
// and nothing changed; other organizations and other exams get a 404.
func TestUpdateQuestion(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn, other := e.NewTenant("US", "pro"), e.NewTenant("DE", "pro")
	teacher := tn.Keys[tenancy.RoleTeacher]
	exam := apptest.Str(e.Do("POST", "/exams", teacher, map[string]any{"name": "Numbers", "language": "en"}).Must(t, 200).Body, "id")
	otherExam := apptest.Str(e.Do("POST", "/exams", teacher, map[string]any{"name": "Other", "language": "en"}).Must(t, 200).Body, "id")
	original := questionJSON{Type: "numeric", Prompt: "What is pi to two decimals?", Points: 2, Config: map[string]any{"correct": 3.14, "tolerance": 0.01}}

	for _, tc := range []struct {
		name  string
		key   string
		exam  string // default: the question's exam
		patch any
		want  outcome
		after questionJSON // the question afterwards
	}{
		{"prompt only", teacher, "", map[string]any{"prompt": "What is e to two decimals?"}, outcome{Status: 200},
			questionJSON{Type: "numeric", Prompt: "What is e to two decimals?", Points: 2, Config: original.Config}},
		{"points only", teacher, "", map[string]any{"points": 5}, outcome{Status: 200},
			questionJSON{Type: "numeric", Prompt: original.Prompt, Points: 5, Config: original.Config}},
		{"config is replaced whole", teacher, "", map[string]any{"config": map[string]any{"correct": 2.72}}, outcome{Status: 200},
			questionJSON{Type: "numeric", Prompt: original.Prompt, Points: 2, Config: map[string]any{"correct": 2.72}}},
		{"empty patch", teacher, "", map[string]any{}, outcome{Status: 200}, original},
		{"new type with its config", teacher, "", map[string]any{"type": "true_false", "config": map[string]any{"correct": true}}, outcome{Status: 200},
			questionJSON{Type: "true_false", Prompt: original.Prompt, Points: 2, Config: map[string]any{"correct": true}}},
		{"config of the wrong type", teacher, "", map[string]any{"config": map[string]any{"correct": "three"}},
			outcome{Status: 400, Reason: "INVALID_ARGUMENT", Field: "config.correct"}, original},
		{"config property the schema lacks", teacher, "", map[string]any{"config": map[string]any{"correct": 3, "extra": 1}},
			outcome{Status: 400, Reason: "INVALID_ARGUMENT", Field: "config"}, original},
		{"new type, old config", teacher, "", map[string]any{"type": "multiple_choice"},
			outcome{Status: 400, Reason: "INVALID_ARGUMENT", Field: "config"}, original},
		{"unknown type", teacher, "", map[string]any{"type": "nonsense"}, outcome{Status: 400, Reason: "INVALID_ARGUMENT", Field: "type"}, original},
		{"negative points", teacher, "", map[string]any{"points": -1}, outcome{Status: 400, Reason: "INVALID_ARGUMENT", Field: "points"}, original},
		{"empty prompt", teacher, "", map[string]any{"prompt": ""}, outcome{Status: 400, Reason: "INVALID_ARGUMENT", Field: "prompt"}, original},
		{"unknown field", teacher, "", map[string]any{"prompt": "x y z", "answer": 3}, outcome{Status: 400, Reason: "INVALID_BODY", Field: "answer"}, original},
		{"a student", tn.Keys[tenancy.RoleStudent], "", map[string]any{"points": 5}, outcome{Status: 403, Reason: "INSUFFICIENT_SCOPE"}, original},
		{"another organization", other.Keys[tenancy.RoleTeacher], "", map[string]any{"points": 5}, outcome{Status: 404, Reason: "QUESTION_NOT_FOUND"}, original},
		{"through another exam", teacher, otherExam, map[string]any{"points": 5}, outcome{Status: 404, Reason: "QUESTION_NOT_FOUND"}, original},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := "/exams/" + exam + "/questions"
			id := apptest.Str(e.Do("POST", base, teacher, original).Must(t, 200).Body, "id")
			path := base + "/" + id
			if tc.exam != "" {
				path = "/exams/" + tc.exam + "/questions/" + id
			}
			r := e.Do("PATCH", path, tc.key, tc.patch)
			if diff := cmp.Diff(tc.want, outcomeOf(r)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s\nbody %s", diff, r.Raw)
			}
			after := decode[questionJSON](t, e.Do("GET", base+"/"+id, teacher, nil).Must(t, 200))
			if diff := cmp.Diff(tc.after, after); diff != "" {
				t.Fatalf("question afterwards (-want +got):\n%s", diff)
			}
			if r.Status == 200 {
				if diff := cmp.Diff(after, decode[questionJSON](t, r)); diff != "" {
					t.Fatalf("PATCH answer differs from a read (-read +answer):\n%s", diff)
				}
			}
		})
	}
}

type questionTypeJSON struct {
	ID      string `json:"id"`
	Key     string `json:"key"`
	Enabled bool   `json:"enabled"`
}

// TestDisableQuestionType covers POST /question-types/{id}/disable, step by
// step: an organization disables a type it enabled (idempotently), after
// which it cannot author questions of it but its existing ones keep
// resolving, and the type is discoverable again; the owner cannot disable
// its own type; private and unknown ids are 404s.
func TestDisableQuestionType(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	owner, user := e.NewTenant("US", "pro"), e.NewTenant("FR", "pro")
	ok, uk := owner.Keys[tenancy.RoleTeacher], user.Keys[tenancy.RoleTeacher]
	public := decode[questionTypeJSON](t, e.Do("POST", "/question-types", ok, customType("word_count", true)).Must(t, 200)).ID
	private := decode[questionTypeJSON](t, e.Do("POST", "/question-types", ok, customType("secret", false)).Must(t, 200)).ID
	e.Do("POST", "/question-types/"+public+"/enable", uk, map[string]any{}).Must(t, 200)
	exam := apptest.Str(e.Do("POST", "/exams", uk, map[string]any{"name": "Writing", "language": "fr"}).Must(t, 200).Body, "id")
	newQ := map[string]any{"type": public, "prompt": "Describe Paris in three words.", "config": map[string]any{"words": 3}}
	existing := apptest.Str(e.Do("POST", "/exams/"+exam+"/questions", uk, newQ).Must(t, 200).Body, "id")

	for _, step := range []struct {
		name string
		key  string
		id   string
		body any
		want outcome
		typ  questionTypeJSON // the answer, when 200
	}{
		{"a student", user.Keys[tenancy.RoleStudent], public, map[string]any{}, outcome{Status: 403, Reason: "INSUFFICIENT_SCOPE"}, questionTypeJSON{}},
		{"an enabled type", uk, public, map[string]any{}, outcome{Status: 200}, questionTypeJSON{ID: public, Key: "word_count"}},
		{"again", uk, public, map[string]any{}, outcome{Status: 200}, questionTypeJSON{ID: public, Key: "word_count"}},
		{"the owner's own type", ok, public, map[string]any{}, outcome{Status: 400, Reason: "QUESTION_TYPE_OWNED"}, questionTypeJSON{}},
		{"another organization's private type", uk, private, map[string]any{}, outcome{Status: 404, Reason: "QUESTION_TYPE_NOT_FOUND"}, questionTypeJSON{}},
		{"an unknown id", uk, "qtp_01ARZ3NDEKTSV4RRFFQ69G5FAV", map[string]any{}, outcome{Status: 404, Reason: "QUESTION_TYPE_NOT_FOUND"}, questionTypeJSON{}},
		{"not a type id", uk, "exm_01ARZ3NDEKTSV4RRFFQ69G5FAV", map[string]any{}, outcome{Status: 400, Reason: "INVALID_ARGUMENT", Field: "id"}, questionTypeJSON{}},
		{"an unknown body field", uk, public, map[string]any{"force": true}, outcome{Status: 400, Reason: "INVALID_BODY", Field: "force"}, questionTypeJSON{}},
	} {
		t.Run(step.name, func(t *testing.T) {
			r := e.Do("POST", "/question-types/"+step.id+"/disable", step.key, step.body)
			if diff := cmp.Diff(step.want, outcomeOf(r)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s\nbody %s", diff, r.Raw)
			}
			if r.Status == 200 {
				if diff := cmp.Diff(step.typ, decode[questionTypeJSON](t, r)); diff != "" {
					t.Fatalf("answer (-want +got):\n%s", diff)
				}
			}
		})
	}

	if r := e.Do("POST", "/exams/"+exam+"/questions", uk, newQ).Must(t, 400); r.Reason() != "QUESTION_TYPE_NOT_ENABLED" {
		t.Fatalf("a question of a disabled type: %s", r.Raw)
	}
	if q := e.Do("GET", "/exams/"+exam+"/questions/"+existing, uk, nil).Must(t, 200).Body; q["typeDefinition"] == nil {
		t.Fatalf("an existing question of a disabled type stopped resolving: %v", q)
	}
	disc := decode[struct {
		QuestionTypes []questionTypeJSON `json:"questionTypes"`
	}](t, e.Do("GET", "/question-types/discover", uk, nil).Must(t, 200))
	if diff := cmp.Diff([]questionTypeJSON{{ID: public, Key: "word_count"}}, disc.QuestionTypes); diff != "" {
		t.Fatalf("discoverable after disabling (-want +got):\n%s", diff)
	}
}
