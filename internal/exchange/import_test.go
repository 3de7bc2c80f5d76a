package exchange_test

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/exchange"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/internal/testkit/ziptest"
)

// TestImportForeignQTI3 reads a package as another QTI 3 authoring tool
// writes it: standard templates, markup in choices, prompts in the body
// or the interaction, an interaction assessd has no type for.
func TestImportForeignQTI3(t *testing.T) {
	p := importBytes(t, ziptest.Dir(t, "testdata/foreign-qti3"))
	if p.Exam != (exchange.ExamSpec{Name: "Geography quiz", Language: "fr", DurationMinutes: 20}) {
		t.Errorf("exam = %+v", p.Exam)
	}
	want := []exchange.QuestionSpec{
		{SourceID: "rivers", Type: assessment.TypeMultipleSelect, Prompt: "Which rivers flow through France?", Points: 2, Revision: 1,
			Config: map[string]any{"options": []any{
				map[string]any{"id": "seine", "text": "Seine", "correct": true},
				map[string]any{"id": "loire", "text": "Loire", "correct": true},
				map[string]any{"id": "danube", "text": "Danube"}}}},
		{SourceID: "capital", Type: assessment.TypeMultipleChoice, Prompt: "What is the capital of France?", Points: 1, Revision: 1,
			Config: map[string]any{"shuffle": true, "options": []any{
				map[string]any{"id": "choice_1", "text": "Lyon"},
				map[string]any{"id": "choice_2", "text": "Paris", "correct": true},
				map[string]any{"id": "choice_3", "text": "Marseille"}}}},
		{SourceID: "height", Type: assessment.TypeNumeric, Prompt: "How tall is the Eiffel tower, in metres?", Points: 1, Revision: 1,
			Config: map[string]any{"correct": 330.0, "tolerance": 5.0}},
	}
	if !reflect.DeepEqual(p.Questions, want) {
		t.Errorf("questions:\n got %#v\nwant %#v", p.Questions, want)
	}
	if len(p.Warnings) != 1 || p.Warnings[0].Item != "order" || !strings.Contains(p.Warnings[0].Message, "qti-order-interaction") {
		t.Errorf("warnings = %+v, want the order interaction reported", p.Warnings)
	}
}

func TestImportQTI21(t *testing.T) {
	p := importBytes(t, ziptest.Dir(t, "testdata/qti21"))
	want := []exchange.QuestionSpec{
		{SourceID: "choice", Type: assessment.TypeMultipleChoice, Prompt: "Look at the text in the picture.\nWhat does it say?", Points: 1, Revision: 1,
			Config: map[string]any{"options": []any{
				map[string]any{"id": "ChoiceA", "text": "You must stay with your luggage at all times.", "correct": true},
				map[string]any{"id": "ChoiceB", "text": "Do not let someone else look after your luggage."},
				map[string]any{"id": "ChoiceC", "text": "Remember your luggage when you leave."}}}},
		{SourceID: "textEntry", Type: assessment.TypeShortText, Points: 1, Revision: 1,
			Prompt: "Now is the winter of our discontent\nMade glorious summer by this sun of ;",
			Config: map[string]any{"acceptedAnswers": []any{"York", "york"}}},
		{SourceID: "extendedText", Type: assessment.TypeEssay, Prompt: "Write Sam a postcard.", Points: 1, Revision: 1,
			Config: map[string]any{"rubric": "Award marks for a complete postcard."}},
	}
	if !reflect.DeepEqual(p.Questions, want) {
		t.Errorf("questions:\n got %#v\nwant %#v", p.Questions, want)
	}
	if p.Exam.Language != "en-GB" || p.Exam.Name != "Imported exam" || len(p.Warnings) != 0 {
		t.Errorf("exam %+v, warnings %+v", p.Exam, p.Warnings)
	}
}

func manifestWith(items ...string) []byte {
	var b strings.Builder
	b.WriteString(`<manifest xmlns="http://www.imsglobal.org/xsd/imscp_v1p1"><resources>`)
	for _, it := range items {
		b.WriteString(`<resource identifier="r" type="imsqti_item_xmlv3p0" href="` + it + `"/>`)
	}
	b.WriteString(`</resources></manifest>`)
	return []byte(b.String())
}

// TestImportRefusesHostileInput checks each refusal's reason, and that a
// bomb is refused by what is decompressed, whatever the header says.
func TestImportRefusesHostileInput(t *testing.T) {
	small := exchange.Limits{MaxBody: 1 << 20, MaxEntries: 10, MaxEntryBytes: 64 << 10, MaxTotalBytes: 256 << 10}
	bomb := bytes.Repeat([]byte("<p>"), 100<<10) // 300 KB, compresses to about 1 KB
	many := map[string][]byte{"imsmanifest.xml": manifestWith()}
	for i := range 11 {
		many[strings.Repeat("x", i+1)] = nil
	}
	spread := map[string][]byte{"imsmanifest.xml": manifestWith("a.xml", "b.xml", "c.xml", "d.xml", "e.xml")}
	for _, n := range []string{"a.xml", "b.xml", "c.xml", "d.xml", "e.xml"} {
		spread[n] = bytes.Repeat([]byte(" "), 60<<10)
	}
	cases := []struct {
		name   string
		body   []byte
		reason string
	}{
		{"not a package", []byte("GIF89a..."), exchange.ReasonNotPackage},
		{"empty", nil, exchange.ReasonNotPackage},
		{"corrupt zip", []byte("PK\x03\x04garbage"), exchange.ReasonNotPackage},
		{"oversized body", bytes.Repeat([]byte(" "), 2<<20), exchange.ReasonTooLarge},
		{"parent path", ziptest.Of(t, map[string][]byte{"../evil.xml": nil}), exchange.ReasonUnsafePath},
		{"nested parent path", ziptest.Of(t, map[string][]byte{"items/../../evil.xml": nil}), exchange.ReasonUnsafePath},
		{"absolute path", ziptest.Of(t, map[string][]byte{"/etc/passwd": nil}), exchange.ReasonUnsafePath},
		{"drive path", ziptest.Of(t, map[string][]byte{"C:/evil.xml": nil}), exchange.ReasonUnsafePath},
		{"backslash path", ziptest.Of(t, map[string][]byte{`..\evil.xml`: nil}), exchange.ReasonUnsafePath},
		{"href out of package", ziptest.Of(t, map[string][]byte{"imsmanifest.xml": manifestWith("../../etc/passwd")}), exchange.ReasonUnsafePath},
		{"too many entries", ziptest.Of(t, many), exchange.ReasonTooLarge},
		{"entry bomb", ziptest.Of(t, map[string][]byte{"imsmanifest.xml": bomb}), exchange.ReasonTooLarge},
		{"total bomb", ziptest.Of(t, spread), exchange.ReasonTooLarge},
		{"doctype", ziptest.Of(t, map[string][]byte{"imsmanifest.xml": []byte(`<?xml version="1.0"?><!DOCTYPE m [<!ENTITY x SYSTEM "file:///etc/passwd">]><manifest>&x;</manifest>`)}), exchange.ReasonForbiddenXML},
		{"entity in item", ziptest.Of(t, map[string][]byte{"imsmanifest.xml": manifestWith("i.xml"), "i.xml": []byte(`<!entity lol "lol"><qti-assessment-item/>`)}), exchange.ReasonForbiddenXML},
		{"no manifest", ziptest.Of(t, map[string][]byte{"item.xml": []byte("<a/>")}), exchange.ReasonMalformed},
		{"not xml manifest", ziptest.Of(t, map[string][]byte{"imsmanifest.xml": []byte("{")}), exchange.ReasonMalformed},
		{"empty package", ziptest.Of(t, map[string][]byte{"imsmanifest.xml": manifestWith()}), exchange.ReasonMalformed},
		{"json of another schema", []byte(`{"schema":"other/v9"}`), exchange.ReasonMalformed},
		{"invalid native", []byte(`{"schema":"assessd.exam/v1","exam":{"name":"x","language":"en"},"questions":[{"type":"essay","prompt":"","config":{},"points":-1}]}`), exchange.ReasonMalformed},
		{"bad json", []byte(`{"schema":`), exchange.ReasonMalformed},
		// PostgreSQL cannot store NUL: text the API would refuse in a
		// request is refused in a document too.
		{"NUL in the exam's name", native(`"n\u0000"`, `"p"`, `{}`), exchange.ReasonMalformed},
		{"NUL in a prompt", native(`"n"`, `"p\u0000"`, `{}`), exchange.ReasonMalformed},
		{"NUL in a config key", native(`"n"`, `"p"`, `{"a\u0000":1}`), exchange.ReasonMalformed},
		{"NUL deep in a config", native(`"n"`, `"p"`, `{"rubric":["ok",{"x":"b\u0000"}]}`), exchange.ReasonMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := exchange.Import(bytes.NewReader(tc.body), small)
			var e *errs.Error
			if !errors.As(err, &e) || e.Kind != errs.KindInvalid || e.Reason != tc.reason || e.Field != "file" {
				t.Fatalf("err = %v (%#v), want reason %s", err, e, tc.reason)
			}
			if strings.Contains(e.Message, "/etc/passwd") && tc.reason != exchange.ReasonUnsafePath {
				t.Errorf("message echoes content: %s", e.Message)
			}
		})
	}
}

// TestImportReportsEveryLeftOutItem: broken or missing items are warnings
// naming the item, never silent drops, and the rest still imports.
func TestImportReportsEveryLeftOutItem(t *testing.T) {
	ok := `<qti-assessment-item xmlns="http://www.imsglobal.org/xsd/imsqtiasi_v3p0" identifier="ok"><qti-response-declaration identifier="R" cardinality="single" base-type="string"/><qti-item-body><p>Say hi</p><qti-extended-text-interaction response-identifier="R"/></qti-item-body></qti-assessment-item>`
	p := importBytes(t, ziptest.Of(t, map[string][]byte{
		"imsmanifest.xml": manifestWith("ok.xml", "broken.xml", "missing.xml", "empty.xml", "two.xml"),
		"ok.xml":          []byte(ok),
		"broken.xml":      []byte("<qti-assessment-item><unclosed>"),
		"empty.xml":       []byte(`<qti-assessment-item identifier="empty"><qti-item-body><p>Read this.</p></qti-item-body></qti-assessment-item>`),
		"two.xml":         []byte(`<qti-assessment-item identifier="two"><qti-item-body><qti-text-entry-interaction response-identifier="A"/><qti-text-entry-interaction response-identifier="B"/></qti-item-body></qti-assessment-item>`),
	}))
	if len(p.Questions) != 1 || p.Questions[0].Prompt != "Say hi" || p.Questions[0].Type != assessment.TypeEssay {
		t.Errorf("questions = %+v", p.Questions)
	}
	var items []string
	for _, w := range p.Warnings {
		items = append(items, w.Item)
	}
	if want := []string{"broken.xml", "missing.xml", "empty", "two"}; !reflect.DeepEqual(items, want) {
		t.Errorf("warned items = %v, want %v (%+v)", items, want, p.Warnings)
	}
}

// TestEditedItemFallsBackToQTI: when another tool changed an item after
// assessd exported it, its side file no longer matches and the QTI
// content (with the change) wins.
func TestEditedItemFallsBackToQTI(t *testing.T) {
	pkg := exportQTI(t, sampleDocument())
	edited := editEntry(t, pkg, "items/qst_03.xml", func(s string) string {
		return strings.Replace(s, "<qti-value>true</qti-value>", "<qti-value>false</qti-value>", 1)
	})
	p := importBytes(t, edited)
	q := p.Questions[2]
	if q.Type != assessment.TypeTrueFalse || q.Config["correct"] != false {
		t.Errorf("edited question = %+v, want the edited answer key", q)
	}
	if len(p.Warnings) != 1 || p.Warnings[0].Item != "qst_03" {
		t.Errorf("warnings = %+v", p.Warnings)
	}
}

func editEntry(t testing.TB, pkg []byte, name string, edit func(string) string) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(pkg), int64(len(pkg)))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range zr.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		files[f.Name] = b
	}
	files[name] = []byte(edit(string(files[name])))
	return ziptest.Of(t, files)
}

func TestExportListsMediaAndDeprecatedTypes(t *testing.T) {
	pkg := exportQTI(t, sampleDocument())
	zr, err := zip.NewReader(bytes.NewReader(pkg), int64(len(pkg)))
	if err != nil {
		t.Fatal(err)
	}
	var manifest bytes.Buffer
	for _, f := range zr.File {
		if f.Name == "imsmanifest.xml" {
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := manifest.ReadFrom(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	m := manifest.String()
	if !strings.Contains(m, `href="https://cdn.example.com/media/planets.png"`) || !strings.Contains(m, `<dependency identifierref="RES-MEDIA-1"/>`) {
		t.Errorf("manifest does not list the media URL as a dependency:\n%s", m)
	}
	p := importBytes(t, pkg)
	if len(p.Types) != 2 || p.Types[1].Key != "year_guess" || !p.Types[1].Deprecated || p.Questions[10].Type != deprecatedType.ID {
		t.Errorf("deprecated type did not export unchanged: %+v", p.Types)
	}
}

// native is a native document of one essay question with the given JSON
// for the exam's name, the prompt and the config.
func native(name, prompt, config string) []byte {
	return []byte(`{"schema":"assessd.exam/v1","exam":{"name":` + name + `,"language":"en"},"questions":[{"type":"essay","prompt":` +
		prompt + `,"config":` + config + `,"points":1}]}`)
}

// TestImportNamesTheTextItRefuses: the document of the refusals above
// imports without its NUL, and a refusal names where the NUL was.
func TestImportNamesTheTextItRefuses(t *testing.T) {
	limits := exchange.Limits{MaxBody: 1 << 20, MaxEntries: 10, MaxEntryBytes: 64 << 10, MaxTotalBytes: 256 << 10}
	if p, err := exchange.Import(bytes.NewReader(native(`"n"`, `"p"`, `{"rubric":["ok",{"x":"b"}]}`)), limits); err != nil || len(p.Questions) != 1 {
		t.Fatalf("the clean document: %v, %+v", err, p)
	}
	_, err := exchange.Import(bytes.NewReader(native(`"n"`, `"p\u0000"`, `{}`)), limits)
	if err == nil || !strings.Contains(err.Error(), "question 1: prompt must not contain NUL characters") {
		t.Fatalf("err = %v", err)
	}
}

// nativeWith is a native document with the given JSON for its question
// types and questions.
func nativeWith(types, questions string) []byte {
	return []byte(`{"schema":"assessd.exam/v1","exam":{"name":"n","language":"en"},"questionTypes":[` + types +
		`],"questions":[` + questions + `]}`)
}

// times is n copies of the JSON value v, comma separated.
func times(n int, v string) string { return strings.TrimSuffix(strings.Repeat(v+",", n), ",") }

// packageDeclaring is a one-item QTI package whose side file declares n
// (empty) question types.
func packageDeclaring(t *testing.T, n int) []byte {
	item := `<qti-assessment-item xmlns="http://www.imsglobal.org/xsd/imsqtiasi_v3p0" identifier="ok"><qti-response-declaration identifier="R" cardinality="single" base-type="string"/><qti-item-body><p>Say hi</p><qti-extended-text-interaction response-identifier="R"/></qti-item-body></qti-assessment-item>`
	return ziptest.Of(t, map[string][]byte{"imsmanifest.xml": manifestWith("ok.xml"), "ok.xml": []byte(item),
		"assessd.json": []byte(`{"schema":"assessd.package/v1","questionTypes":[` + times(n, "{}") + `]}`)})
}

// TestImportRefusesTooManyEntries: a document, or a package's side file,
// declaring more question types or questions than the native schema
// allows is refused before they are validated or decoded one by one. A
// 5 KB package declared 1.4 million types, which took gigabytes to decode
// and minutes to resolve (decision 0163).
func TestImportRefusesTooManyEntries(t *testing.T) {
	typ := `{"id":"t","key":"kind","name":"K","configSchema":{}}`
	question := `{"type":"essay","prompt":"p","config":{},"points":1}`
	cases := []struct {
		name, message string
		body          []byte
	}{
		{"types", "holds 501 question types; a document holds at most 500", nativeWith(times(501, typ), question)},
		{"questions", "holds 1001 questions; a document holds at most 1000", nativeWith("", times(1001, question))},
		{"types of a package", "assessd.json holds 1398080 question types; a package holds at most 500",
			packageDeclaring(t, 1_398_080)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := exchange.Import(bytes.NewReader(tc.body), exchange.DefaultLimits)
			var e *errs.Error
			if !errors.As(err, &e) || e.Reason != exchange.ReasonMalformed || e.Field != "file" || !strings.HasSuffix(e.Message, tc.message) {
				t.Fatalf("err = %v, want %s", err, tc.message)
			}
		})
	}
	p, err := exchange.Import(bytes.NewReader(nativeWith(times(500, typ), times(1000, question))), exchange.DefaultLimits)
	if err != nil || len(p.Types) != 500 || len(p.Questions) != 1000 {
		t.Errorf("the largest document: %d types, %d questions, %v", len(p.Types), len(p.Questions), err)
	}
	if p, err := exchange.Import(bytes.NewReader(packageDeclaring(t, 500)), exchange.DefaultLimits); err != nil || len(p.Types) != 500 {
		t.Errorf("the largest package: %d types, %v", len(p.Types), err)
	}
}

// TestImportRefusesAbsurdNumbers: a number literal longer than 32
// characters or with an exponent beyond ±324 is refused before
// validation, which compares numbers as exact rationals: 1,000 questions
// worth 1e999999 points took minutes (decision 0163). Every float64 still
// imports.
func TestImportRefusesAbsurdNumbers(t *testing.T) {
	for name, body := range map[string][]byte{
		"huge exponents": nativeWith("", times(1000, `{"type":"essay","prompt":"p","config":{},"points":1e999999,"revision":1e999999}`)),
		"tiny exponent":  native(`"n"`, `"p"`, `{"x":-1E-999999}`),
		"exponent 325":   native(`"n"`, `"p"`, `{"x":1e+325}`),
		"long literal":   native(`"n"`, `"p"`, `{"x":0.`+strings.Repeat("0", 30)+`1}`),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := exchange.Import(bytes.NewReader(body), exchange.DefaultLimits)
			var e *errs.Error
			if !errors.As(err, &e) || e.Reason != exchange.ReasonMalformed ||
				!strings.HasSuffix(e.Message, "holds a number longer than 32 characters or with an exponent beyond ±324") {
				t.Fatalf("err = %v", err)
			}
		})
	}
	p, err := exchange.Import(bytes.NewReader(native(`"n"`, `"p"`, `{"min":-1.7976931348623157e+308,"tiny":5e-324,"int":100000000000000000000}`)),
		exchange.DefaultLimits)
	if want := map[string]any{"min": -math.MaxFloat64, "tiny": 5e-324, "int": 1e20}; err != nil || !reflect.DeepEqual(p.Questions[0].Config, want) {
		t.Errorf("extreme float64s: %v, %v", p, err)
	}
}
