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

	"github.com/assessd/assessd/internal/testkit/ziptest"
	"github.com/assessd/assessd/tenancy"
)

// exchangeFixture packs a package of the exchange tests, written by other
// QTI tools.
func exchangeFixture(t *testing.T, dir string) []byte {
	return ziptest.Dir(t, filepath.Join("..", "exchange", "testdata", dir))
}

func (e *env) importExam(key, contentType string, body []byte) response {
	e.t.Helper()
	return e.doWith("POST", "/exam-imports", key, string(body), http.Header{"Content-Type": {contentType}})
}

// comparable content of an exam's questions, in order.
func (e *env) questionContent(t *testing.T, key, examID string) (ids []string, content []map[string]any) {
	t.Helper()
	for _, q := range items(e.do("GET", "/exams/"+examID+"/questions?pageSize=200", key, nil).must(t, 200).body, "questions") {
		ids = append(ids, str(q, "id"))
		def, _ := q["typeDefinition"].(map[string]any)
		content = append(content, map[string]any{"type": def["key"], "prompt": q["prompt"], "config": q["config"], "points": q["points"]})
	}
	return ids, content
}

func TestExamExportImportAcrossOrganizations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := e.newTenant("US", "pro"), e.newTenant("DE", "pro")
	keyA, keyB := a.keys[tenancy.RoleTeacher], b.keys[tenancy.RoleTeacher]
	src := e.authorAllTypes(t, keyA)
	qtp := str(e.do("POST", "/question-types", keyA, customType("word_count", false)).must(t, 200).body, "id")
	e.do("POST", "/exams/"+src.exam+"/questions", keyA, map[string]any{"type": qtp, "prompt": "Answer in three words.",
		"config": map[string]any{"words": 3}}).must(t, 200)
	srcIDs, want := e.questionContent(t, keyA, src.exam)

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
		return num(e.do("POST", "/exams/"+examID+"/results", key, map[string]any{"userId": student, "answers": given}).must(t, 200).body, "score")
	}
	wantScore := submit(keyA, src.exam, srcIDs, want, a.users[tenancy.RoleStudent].ID)
	if wantScore != 6 {
		t.Fatalf("source score %v", wantScore)
	}

	for _, tc := range []struct{ format, ctype string }{{"", "application/zip"}, {"qti3", "application/zip"}, {"json", "application/json"}} {
		exp := e.do("GET", "/exams/"+src.exam+"/export?format="+tc.format, keyA, nil).must(t, 200)
		if ct := exp.header.Get("Content-Type"); ct != tc.ctype || !strings.HasPrefix(exp.header.Get("Content-Disposition"), "attachment") {
			t.Fatalf("%q: content type %q, disposition %q", tc.format, ct, exp.header.Get("Content-Disposition"))
		}
		if tc.format == "json" && (exp.body["schema"] != "assessd.exam/v1" || len(exp.body["questions"].([]any)) != 8) {
			t.Fatalf("native document %s", exp.raw)
		}
		imp := e.importExam(keyB, tc.ctype, exp.raw).must(t, 200).body
		if !strings.HasPrefix(str(imp, "id"), "imp_") || len(items(imp, "warnings")) != 0 {
			t.Fatalf("%q: import %v", tc.format, imp)
		}
		ids, got := e.questionContent(t, keyB, str(imp, "examId"))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: imported questions\n got %v\nwant %v", tc.format, got, want)
		}
		if s := submit(keyB, str(imp, "examId"), ids, got, b.users[tenancy.RoleStudent].ID); s != wantScore {
			t.Fatalf("%q: imported exam scores %v, want %v", tc.format, s, wantScore)
		}
	}
	// The custom type was created in B.
	if l := items(e.do("GET", "/question-types?pageSize=200", keyB, nil).must(t, 200).body, "questionTypes"); len(l) == 0 {
		t.Fatalf("no custom type in the importing organization")
	}

	// Multipart upload of the same package.
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	fw, _ := mw.CreateFormFile("file", "exam.zip")
	_, _ = fw.Write(e.do("GET", "/exams/"+src.exam+"/export", keyA, nil).must(t, 200).raw)
	_ = mw.Close()
	e.importExam(keyB, mw.FormDataContentType(), mp.Bytes()).must(t, 200)

	// Access: foreign exam 404, students 403, bad format 400 naming it.
	e.do("GET", "/exams/"+src.exam+"/export", keyB, nil).must(t, 404)
	e.do("GET", "/exams/"+src.exam+"/export", a.keys[tenancy.RoleStudent], nil).must(t, 403)
	e.do("GET", "/exams/"+src.exam+"/export", "", nil).must(t, 401)
	if r := e.do("GET", "/exams/"+src.exam+"/export?format=pdf", keyA, nil).must(t, 400); r.field() != "format" {
		t.Fatalf("bad format: %s", r.raw)
	}
	e.importExam(b.keys[tenancy.RoleStudent], "application/zip", exchangeFixture(t, "qti21")).must(t, 403)

	for _, action := range []string{"exam.exported", "exam.imported"} {
		if l := items(e.do("GET", "/audit-logs?action="+action, a.keys[tenancy.RoleOwner], nil).must(t, 200).body, "auditLogs"); action == "exam.exported" && len(l) == 0 {
			t.Fatalf("no %s audit entry in A", action)
		}
		if l := items(e.do("GET", "/audit-logs?action="+action, b.keys[tenancy.RoleOwner], nil).must(t, 200).body, "auditLogs"); action == "exam.imported" && len(l) != 4 {
			t.Fatalf("%d %s audit entries in B", len(l), action)
		}
	}
}

func TestExamImportOfOtherToolsPackages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("FR", "pro")
	key := tn.keys[tenancy.RoleTeacher]
	imp := e.importExam(key, "application/zip", exchangeFixture(t, "foreign-qti3")).must(t, 200).body
	if w := items(imp, "warnings"); len(w) != 1 || str(w[0], "item") != "order" {
		t.Fatalf("foreign QTI 3 warnings %v", w)
	}
	if _, qs := e.questionContent(t, key, str(imp, "examId")); len(qs) != 3 || qs[2]["type"] != "numeric" {
		t.Fatalf("foreign QTI 3 questions %v", qs)
	}
	imp = e.importExam(key, "application/zip", exchangeFixture(t, "qti21")).must(t, 200).body
	if _, qs := e.questionContent(t, key, str(imp, "examId")); len(qs) != 3 || len(items(imp, "warnings")) != 0 {
		t.Fatalf("QTI 2.1 import %v: %v", imp, qs)
	}
}

func TestExamImportRefusesHostilePackages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("GB", "pro")
	key := tn.keys[tenancy.RoleTeacher]
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
		r := e.importExam(key, "application/zip", tc.body)
		if r.status != tc.status || r.reason() != tc.reason || r.field() != "file" {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.status, r.raw, tc.status, tc.reason)
		}
	}
	if l := items(e.do("GET", "/exams", key, nil).must(t, 200).body, "exams"); len(l) != 0 {
		t.Fatalf("refused imports created exams: %v", l)
	}
}

func TestEmbedAuthoringExport(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("NL", "pro")
	key := tn.keys[tenancy.RoleTeacher]
	src := e.authorAllTypes(t, key)
	sess := e.do("POST", "/embed-sessions", key, map[string]any{"flow": "authoring", "actor": tn.users[tenancy.RoleTeacher].ID,
		"examId": src.exam, "allowedOrigins": []any{"https://lms.example.com"}}).must(t, 200).body
	get := func(u string) response {
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("Sec-Fetch-Dest", "iframe")
		res, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(res.Body)
		return response{status: res.StatusCode, header: res.Header, raw: buf.Bytes()}
	}
	page := get(str(sess, "url")).must(t, 200)
	if !bytes.Contains(page.raw, []byte("/export?format=qti3")) {
		t.Fatalf("the authoring page offers no export:\n%s", page.raw)
	}
	zipped := get(str(sess, "url")+"/export").must(t, 200)
	if zipped.header.Get("Content-Type") != "application/zip" || !bytes.HasPrefix(zipped.raw, []byte("PK")) {
		t.Fatalf("embed export: %s %q", zipped.header.Get("Content-Type"), zipped.raw[:min(len(zipped.raw), 64)])
	}
	// The download imports like the API's.
	imp := e.importExam(key, "application/zip", zipped.raw).must(t, 200).body
	if _, qs := e.questionContent(t, key, str(imp, "examId")); len(qs) != 7 {
		t.Fatalf("imported %d questions", len(qs))
	}
	native := get(str(sess, "url")+"/export?format=json").must(t, 200)
	if !bytes.Contains(native.raw, []byte(`"schema": "assessd.exam/v1"`)) {
		t.Fatalf("embed native export %s", native.raw)
	}
	get(str(sess, "url")+"/export?format=pdf").must(t, 400)
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
	e := newEnv(t)
	a, b := e.newTenant("US", "pro"), e.newTenant("DE", "pro")
	keyA, keyB := a.keys[tenancy.RoleTeacher], b.keys[tenancy.RoleTeacher]
	exam := str(e.do("POST", "/exams", keyA, map[string]any{"name": "Old", "language": "en"}).must(t, 200).body, "id")
	qtp := str(e.do("POST", "/question-types", keyA, customType("word_count", false)).must(t, 200).body, "id")
	e.do("POST", "/exams/"+exam+"/questions", keyA, map[string]any{"type": qtp, "prompt": "Answer in two words.",
		"config": map[string]any{"words": 2}}).must(t, 200)
	e.do("PATCH", "/question-types/"+qtp, keyA, map[string]any{"deprecated": true}).must(t, 200)
	pkg := e.do("GET", "/exams/"+exam+"/export", keyA, nil).must(t, 200).raw
	imp := e.importExam(keyB, "application/zip", pkg).must(t, 200).body
	qs := items(e.do("GET", "/exams/"+str(imp, "examId")+"/questions", keyB, nil).must(t, 200).body, "questions")
	if len(qs) != 1 {
		t.Fatalf("imported questions %v", qs)
	}
	def, _ := qs[0]["typeDefinition"].(map[string]any)
	if def["key"] != "word_count" || def["deprecated"] != true || def["builtIn"] == true {
		t.Fatalf("imported type %v", def)
	}
}
