package app_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/testkit/apptest"
	"github.com/assessd/assessd/internal/testkit/ziptest"
	"github.com/assessd/assessd/tenancy"
)

// exchangeFixture packs a package of the exchange tests, written by other
// QTI tools.
func exchangeFixture(t *testing.T, dir string) []byte {
	return ziptest.Dir(t, filepath.Join("..", "exchange", "testdata", dir))
}

func importExam(e *env, key, contentType string, body []byte) response {
	e.T.Helper()
	return e.DoWith("POST", "/exam-imports", key, string(body), http.Header{"Content-Type": {contentType}})
}

// comparable content of an exam's questions, in order.
func questionContent(e *env, t *testing.T, key, examID string) (ids []string, content []map[string]any) {
	t.Helper()
	for _, q := range apptest.Items(e.Do("GET", "/exams/"+examID+"/questions?pageSize=200", key, nil).Must(t, 200).Body, "questions") {
		ids = append(ids, apptest.Str(q, "id"))
		def, _ := q["typeDefinition"].(map[string]any)
		content = append(content, map[string]any{"type": def["key"], "prompt": q["prompt"], "config": q["config"], "points": q["points"]})
	}
	return ids, content
}

func TestExamExportImportAcrossOrganizations(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	a, b := e.NewTenant("US", "pro"), e.NewTenant("DE", "pro")
	keyA, keyB := a.Keys[tenancy.RoleTeacher], b.Keys[tenancy.RoleTeacher]
	src := authorAllTypes(e, t, keyA)
	qtp := apptest.Str(e.Do("POST", "/question-types", keyA, customType("word_count", false)).Must(t, 200).Body, "id")
	e.Do("POST", "/exams/"+src.exam+"/questions", keyA, map[string]any{"type": qtp, "prompt": "Answer in three words.",
		"config": map[string]any{"words": 3}}).Must(t, 200)
	srcIDs, want := questionContent(e, t, keyA, src.exam)

	answers := map[string]any{ // by type key
		"multiple_choice": "b", "multiple_select": []any{"a", "b"}, "true_false": false, "short_text": "Paris",
		"numeric": 3.141, "word_count": "one two three",
	}
	submit := func(key, examID string, qids []string, content []map[string]any, student string) float64 {
		var given []any
		for i, id := range qids {
			if v, ok := answers[content[i]["type"].(string)]; ok {
				given = append(given, map[string]any{"questionId": id, "value": v})
			}
		}
		return apptest.Num(e.Do("POST", "/exams/"+examID+"/results", key, map[string]any{"userId": student, "answers": given}).Must(t, 200).Body, "score")
	}
	wantScore := submit(keyA, src.exam, srcIDs, want, a.Users[tenancy.RoleStudent].ID)
	if wantScore != 6 {
		t.Fatalf("source score %v", wantScore)
	}

	for _, tc := range []struct{ format, ctype string }{{"", "application/zip"}, {"qti3", "application/zip"}, {"json", "application/json"}} {
		exp := e.Do("GET", "/exams/"+src.exam+"/export?format="+tc.format, keyA, nil).Must(t, 200)
		if ct := exp.Header.Get("Content-Type"); ct != tc.ctype || !strings.HasPrefix(exp.Header.Get("Content-Disposition"), "attachment") {
			t.Fatalf("%q: content type %q, disposition %q", tc.format, ct, exp.Header.Get("Content-Disposition"))
		}
		if tc.format == "json" && (exp.Body["schema"] != "assessd.exam/v1" || len(exp.Body["questions"].([]any)) != 8) {
			t.Fatalf("native document %s", exp.Raw)
		}
		imp := importExam(e, keyB, tc.ctype, exp.Raw).Must(t, 200).Body
		if !strings.HasPrefix(apptest.Str(imp, "id"), "imp_") || len(apptest.Items(imp, "warnings")) != 0 {
			t.Fatalf("%q: import %v", tc.format, imp)
		}
		ids, got := questionContent(e, t, keyB, apptest.Str(imp, "examId"))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: imported questions\n got %v\nwant %v", tc.format, got, want)
		}
		if s := submit(keyB, apptest.Str(imp, "examId"), ids, got, b.Users[tenancy.RoleStudent].ID); s != wantScore {
			t.Fatalf("%q: imported exam scores %v, want %v", tc.format, s, wantScore)
		}
	}
	// The custom type was created in B.
	if l := apptest.Items(e.Do("GET", "/question-types?pageSize=200", keyB, nil).Must(t, 200).Body, "questionTypes"); len(l) == 0 {
		t.Fatalf("no custom type in the importing organization")
	}

	// Multipart upload of the same package.
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	fw, _ := mw.CreateFormFile("file", "exam.zip")
	_, _ = fw.Write(e.Do("GET", "/exams/"+src.exam+"/export", keyA, nil).Must(t, 200).Raw)
	_ = mw.Close()
	importExam(e, keyB, mw.FormDataContentType(), mp.Bytes()).Must(t, 200)

	// Access: foreign exam 404, students 403, bad format 400 naming it.
	e.Do("GET", "/exams/"+src.exam+"/export", keyB, nil).Must(t, 404)
	e.Do("GET", "/exams/"+src.exam+"/export", a.Keys[tenancy.RoleStudent], nil).Must(t, 403)
	e.Do("GET", "/exams/"+src.exam+"/export", "", nil).Must(t, 401)
	if r := e.Do("GET", "/exams/"+src.exam+"/export?format=pdf", keyA, nil).Must(t, 400); r.Field() != "format" {
		t.Fatalf("bad format: %s", r.Raw)
	}
	importExam(e, b.Keys[tenancy.RoleStudent], "application/zip", exchangeFixture(t, "qti21")).Must(t, 403)

	for _, action := range []string{"exam.exported", "exam.imported"} {
		if l := apptest.Items(e.Do("GET", "/audit-logs?action="+action, a.Keys[tenancy.RoleOwner], nil).Must(t, 200).Body, "auditLogs"); action == "exam.exported" && len(l) == 0 {
			t.Fatalf("no %s audit entry in A", action)
		}
		if l := apptest.Items(e.Do("GET", "/audit-logs?action="+action, b.Keys[tenancy.RoleOwner], nil).Must(t, 200).Body, "auditLogs"); action == "exam.imported" && len(l) != 4 {
			t.Fatalf("%d %s audit entries in B", len(l), action)
		}
	}
}

func TestExamImportOfOtherToolsPackages(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("FR", "pro")
	key := tn.Keys[tenancy.RoleTeacher]
	imp := importExam(e, key, "application/zip", exchangeFixture(t, "foreign-qti3")).Must(t, 200).Body
	if w := apptest.Items(imp, "warnings"); len(w) != 1 || apptest.Str(w[0], "item") != "order" {
		t.Fatalf("foreign QTI 3 warnings %v", w)
	}
	if _, qs := questionContent(e, t, key, apptest.Str(imp, "examId")); len(qs) != 3 || qs[2]["type"] != "numeric" {
		t.Fatalf("foreign QTI 3 questions %v", qs)
	}
	imp = importExam(e, key, "application/zip", exchangeFixture(t, "qti21")).Must(t, 200).Body
	if _, qs := questionContent(e, t, key, apptest.Str(imp, "examId")); len(qs) != 3 || len(apptest.Items(imp, "warnings")) != 0 {
		t.Fatalf("QTI 2.1 import %v: %v", imp, qs)
	}
}

func TestExamImportRefusesHostilePackages(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("GB", "pro")
	key := tn.Keys[tenancy.RoleTeacher]
	manifest := []byte(`<?xml version="1.0"?><manifest xmlns="http://www.imsglobal.org/xsd/qti/qtiv3p0/imscp_v1p1"><resources/></manifest>`)
	for _, tc := range []struct {
		name   string
		body   []byte
		status int
		reason string
	}{
		{"not a package", []byte("hello"), 400, "IMPORT_NOT_A_PACKAGE"},
		{"escaping entry", ziptest.Of(t, map[string][]byte{"imsmanifest.xml": manifest, "../evil.xml": []byte("x")}), 400, "IMPORT_UNSAFE_PATH"},
		{"bomb", ziptest.Of(t, map[string][]byte{"imsmanifest.xml": bytes.Repeat([]byte(" "), 5<<20)}), 413, "IMPORT_TOO_LARGE"},
		{"external entity", ziptest.Of(t, map[string][]byte{"imsmanifest.xml": []byte(`<?xml version="1.0"?><!DOCTYPE m [<!ENTITY x SYSTEM "file:///etc/passwd">]><manifest>&x;</manifest>`)}), 400, "IMPORT_XML_FORBIDDEN"},
		{"oversized", append([]byte("PK\x03\x04"), make([]byte, 33<<20)...), 413, "IMPORT_TOO_LARGE"},
		{"bad native document", []byte(`{"schema":"assessd.exam/v9"}`), 400, "IMPORT_MALFORMED"},
		{"too many questions", tooManyQuestions(t), 400, "INVALID_ARGUMENT"},
	} {
		r := importExam(e, key, "application/zip", tc.body)
		if r.Status != tc.status || r.Reason() != tc.reason || r.Field() != "file" {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.Status, r.Raw, tc.status, tc.reason)
		}
	}
	if l := apptest.Items(e.Do("GET", "/exams", key, nil).Must(t, 200).Body, "exams"); len(l) != 0 {
		t.Fatalf("refused imports created exams: %v", l)
	}
}

func TestEmbedAuthoringExport(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	tn := e.NewTenant("NL", "pro")
	key := tn.Keys[tenancy.RoleTeacher]
	src := authorAllTypes(e, t, key)
	sess := e.Do("POST", "/embed-sessions", key, map[string]any{"flow": "authoring", "actor": tn.Users[tenancy.RoleTeacher].ID,
		"examId": src.exam, "allowedOrigins": []any{"https://lms.example.com"}}).Must(t, 200).Body
	get := func(u string) response {
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("Sec-Fetch-Dest", "iframe")
		res, err := e.Srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(res.Body)
		return response{Status: res.StatusCode, Header: res.Header, Raw: buf.Bytes()}
	}
	page := get(apptest.Str(sess, "url")).Must(t, 200)
	if !bytes.Contains(page.Raw, []byte("/export?format=qti3")) {
		t.Fatalf("the authoring page offers no export:\n%s", page.Raw)
	}
	zipped := get(apptest.Str(sess, "url")+"/export").Must(t, 200)
	if zipped.Header.Get("Content-Type") != "application/zip" || !bytes.HasPrefix(zipped.Raw, []byte("PK")) {
		t.Fatalf("embed export: %s %q", zipped.Header.Get("Content-Type"), zipped.Raw[:min(len(zipped.Raw), 64)])
	}
	// The download imports like the API's.
	imp := importExam(e, key, "application/zip", zipped.Raw).Must(t, 200).Body
	if _, qs := questionContent(e, t, key, apptest.Str(imp, "examId")); len(qs) != 7 {
		t.Fatalf("imported %d questions", len(qs))
	}
	native := get(apptest.Str(sess, "url")+"/export?format=json").Must(t, 200)
	if !bytes.Contains(native.Raw, []byte(`"schema": "assessd.exam/v1"`)) {
		t.Fatalf("embed native export %s", native.Raw)
	}
	get(apptest.Str(sess, "url")+"/export?format=pdf").Must(t, 400)
}

// tooManyQuestions is a native document of one question more than an exam
// holds.
func tooManyQuestions(t *testing.T) []byte {
	qs := make([]any, 501)
	for i := range qs {
		qs[i] = map[string]any{"type": "true_false", "revision": 1, "prompt": "Water is wet.", "config": map[string]any{"correct": true}, "points": 1}
	}
	b, err := json.Marshal(map[string]any{"schema": "assessd.exam/v1", "questionTypes": []any{}, "questions": qs,
		"exam": map[string]any{"name": "Big", "description": "", "language": "en", "durationMinutes": 0}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A question of a deprecated custom type exports unchanged (spec 2.4) and
// imports with its type created, then deprecated, in the importing
// organization (decision 0072).
func TestExamImportKeepsDeprecatedTypes(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	a, b := e.NewTenant("US", "pro"), e.NewTenant("DE", "pro")
	keyA, keyB := a.Keys[tenancy.RoleTeacher], b.Keys[tenancy.RoleTeacher]
	exam := apptest.Str(e.Do("POST", "/exams", keyA, map[string]any{"name": "Old", "language": "en"}).Must(t, 200).Body, "id")
	qtp := apptest.Str(e.Do("POST", "/question-types", keyA, customType("word_count", false)).Must(t, 200).Body, "id")
	e.Do("POST", "/exams/"+exam+"/questions", keyA, map[string]any{"type": qtp, "prompt": "Answer in two words.",
		"config": map[string]any{"words": 2}}).Must(t, 200)
	e.Do("PATCH", "/question-types/"+qtp, keyA, map[string]any{"deprecated": true}).Must(t, 200)
	pkg := e.Do("GET", "/exams/"+exam+"/export", keyA, nil).Must(t, 200).Raw
	imp := importExam(e, keyB, "application/zip", pkg).Must(t, 200).Body
	qs := apptest.Items(e.Do("GET", "/exams/"+apptest.Str(imp, "examId")+"/questions", keyB, nil).Must(t, 200).Body, "questions")
	if len(qs) != 1 {
		t.Fatalf("imported questions %v", qs)
	}
	def, _ := qs[0]["typeDefinition"].(map[string]any)
	if def["key"] != "word_count" || def["deprecated"] != true || def["builtIn"] == true {
		t.Fatalf("imported type %v", def)
	}
}
