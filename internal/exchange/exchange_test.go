package exchange_test

import (
	"archive/zip"
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/exchange"
)

// essayType is an organization's AI-graded custom type.
var essayType = assessment.TypeDef{ID: "qtp_01JCUSTOMESSAY", OrgID: "org_1", Key: "lab_report", Name: "Lab report",
	Description: "A lab report graded by AI.",
	ConfigSchema: map[string]any{"type": "object", "properties": map[string]any{
		"rubric": map[string]any{"type": "string"}, "sections": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}},
	GradingEnabled: true, Public: true, Owned: true, Enabled: true}

// deprecatedType is a rule-scored custom type that was deprecated: its
// questions keep exporting unchanged.
var deprecatedType = assessment.TypeDef{ID: "qtp_01JDEPRECATED", OrgID: "org_1", Key: "year_guess", Name: "Year",
	ConfigSchema: map[string]any{"type": "object", "properties": map[string]any{"year": map[string]any{"type": "integer"}}},
	Condition:    "=answer.value = config.year", Deprecated: true, Owned: true, Enabled: true}

func builtin(key string) *assessment.TypeDef {
	return &assessment.TypeDef{Key: key, BuiltIn: true}
}

// sampleExam has a question of every built-in type, the custom types, odd
// option ids, multi-line prompts and media URLs.
func sampleExam() (assessment.Exam, []assessment.Question) {
	exam := assessment.Exam{ID: "exm_01JEXAM", Name: "Physics & chemistry <mid-term>", Description: "Units 1–3.\nNo calculators.",
		Language: "pt-BR", DurationMinutes: 45}
	qs := []assessment.Question{
		{ID: "qst_01", Type: assessment.TypeMultipleChoice, Points: 2, Prompt: "Which planet is largest?\nSee https://cdn.example.com/media/planets.png",
			Config: map[string]any{"shuffle": true, "options": []any{
				map[string]any{"id": "a", "text": "Mars", "feedback": "Mars is small."},
				map[string]any{"id": "b", "text": "Jupiter", "correct": true, "feedback": "Yes."},
				map[string]any{"id": "1 c", "text": "Saturn  (rings)", "correct": true},
			}}},
		{ID: "qst_02", Type: assessment.TypeMultipleSelect, Points: 3, Prompt: "Pick the noble gases.",
			Config: map[string]any{"options": []any{
				map[string]any{"id": "he", "text": "Helium", "correct": true},
				map[string]any{"id": "o", "text": "Oxygen", "correct": false},
				map[string]any{"id": "ne", "text": "Neon", "correct": true},
			}}},
		{ID: "qst_03", Type: assessment.TypeTrueFalse, Points: 1, Prompt: "Water boils at 100 °C at sea level.",
			Config: map[string]any{"correct": true}},
		{ID: "qst_04", Type: assessment.TypeShortText, Points: 1.5, Prompt: "Capital of the state of New York?",
			Config: map[string]any{"acceptedAnswers": []any{"Albany", "  albany city ", "A$b.c*"}}},
		{ID: "qst_05", Type: assessment.TypeShortText, Points: 1, Prompt: "Symbol of sodium (case matters).",
			Config: map[string]any{"acceptedAnswers": []any{"Na"}, "caseSensitive": true}},
		{ID: "qst_06", Type: assessment.TypeNumeric, Points: 2, Prompt: "g in m/s²?",
			Config: map[string]any{"correct": 9.81, "tolerance": 0.05, "unit": "m/s²"}},
		{ID: "qst_07", Type: assessment.TypeNumeric, Points: 1, Prompt: "2 + 2?", Config: map[string]any{"correct": 4.0}},
		{ID: "qst_08", Type: assessment.TypeEssay, Points: 10, Prompt: "Explain entropy.",
			Config: map[string]any{"rubric": "Mentions disorder.\nMentions the second law.", "minWords": 50.0, "maxWords": 400.0}},
		{ID: "qst_09", Type: assessment.TypeFileUpload, Points: 5, Prompt: "Upload your lab photos.",
			Config: map[string]any{"instructions": "JPEG or PNG.", "rubric": "Clear photos.", "maxFiles": 3.0,
				"acceptedTypes": []any{"image/png", "image/jpeg"}}},
		{ID: "qst_10", Type: essayType.ID, Points: 20, Prompt: "Write the lab report.",
			Config: map[string]any{"rubric": "Hypothesis, method, results.", "sections": []any{"method", "results"}}},
		{ID: "qst_11", Type: deprecatedType.ID, Points: 1, Prompt: "When did Apollo 11 land?", Config: map[string]any{"year": 1969.0}},
	}
	for i := range qs {
		qs[i].ExamID, qs[i].Position = exam.ID, i+1
		switch qs[i].Type {
		case essayType.ID:
			qs[i].Def = &essayType
		case deprecatedType.ID:
			qs[i].Def = &deprecatedType
		default:
			qs[i].Def = builtin(qs[i].Type)
		}
	}
	exam.QuestionCount = len(qs)
	return exam, qs
}

func sampleDocument() exchange.Document { return exchange.NewDocument(sampleExam()) }

func exportQTI(t testing.TB, doc exchange.Document) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := exchange.WriteQTI(&buf, doc); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func importBytes(t testing.TB, b []byte) exchange.Plan {
	t.Helper()
	p, err := exchange.Import(bytes.NewReader(b), exchange.DefaultLimits)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	return p
}

func TestNativeRoundTrip(t *testing.T) {
	doc := sampleDocument()
	var buf bytes.Buffer
	if err := exchange.WriteNative(&buf, doc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"schema": "assessd.exam/v1"`) || !strings.Contains(buf.String(), `"revision": 1`) {
		t.Fatalf("native document lacks its schema or revisions:\n%.400s", buf.String())
	}
	got := importBytes(t, buf.Bytes())
	assertPlan(t, got, doc.Plan())
	if len(got.Types) != 2 || !got.Types[1].Deprecated {
		t.Errorf("custom types = %+v, want the AI-graded and the deprecated type inline", got.Types)
	}
}

func TestQTIRoundTrip(t *testing.T) {
	doc := sampleDocument()
	pkg := exportQTI(t, doc)
	got := importBytes(t, pkg)
	assertPlan(t, got, doc.Plan())
	zr, err := zip.NewReader(bytes.NewReader(pkg), int64(len(pkg)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if age := time.Since(f.Modified); age < 0 || age > time.Hour {
			t.Errorf("%s is dated %v, want the time of export", f.Name, f.Modified)
		}
	}
}

// TestQTIRoundTripWithoutSideFiles imports the package as a tool that
// knows nothing of assessd would leave it: every built-in question comes
// back from standard QTI alone, with the same scoring configuration;
// questions of custom types are reported, not dropped silently.
func TestQTIRoundTripWithoutSideFiles(t *testing.T) {
	doc := sampleDocument()
	stripped := rezip(t, exportQTI(t, doc), func(name string) bool { return !strings.HasSuffix(name, ".json") })
	got := importBytes(t, stripped)
	want := doc.Plan()
	var wantQs []exchange.QuestionSpec
	for _, q := range want.Questions {
		switch q.Type {
		case assessment.TypeEssay:
			q.Config = map[string]any{"rubric": q.Config["rubric"]} // word limits have no QTI form
		case assessment.TypeFileUpload:
			q.Config = map[string]any{"rubric": q.Config["rubric"], "instructions": q.Config["instructions"]}
		}
		if !isBuiltin(q.Type) {
			// The closest built-in type, keeping the rubric.
			r, ok := q.Config["rubric"]
			q.Type, q.Config = assessment.TypeEssay, map[string]any{}
			if ok {
				q.Config["rubric"] = r
			}
		}
		q.Config = normalized(q.Config)
		wantQs = append(wantQs, q)
	}
	for i := range got.Questions {
		got.Questions[i].Config = normalized(got.Questions[i].Config)
	}
	if !reflect.DeepEqual(got.Questions, wantQs) {
		t.Errorf("questions from standard QTI:\n got %#v\nwant %#v", got.Questions, wantQs)
	}
	if got.Exam.Name != doc.Exam.Name || got.Exam.Language != "pt-BR" || got.Exam.DurationMinutes != 45 {
		t.Errorf("exam from the test and items = %+v", got.Exam)
	}
	if len(got.Warnings) != 2 || got.Warnings[0].Item != "qst_10" || got.Warnings[1].Item != "qst_11" {
		t.Errorf("warnings = %+v, want one for each custom-type question", got.Warnings)
	}
}

func isBuiltin(key string) bool {
	_, ok := assessment.Builtin(key)
	return ok
}

// normalized drops false booleans: QTI says "not correct" or "not case
// sensitive" by omission, as assessd's defaults do.
func normalized(v map[string]any) map[string]any {
	out := map[string]any{}
	for k, x := range v {
		switch x := x.(type) {
		case bool:
			if x {
				out[k] = x
			}
		case []any:
			list := make([]any, len(x))
			for i, e := range x {
				if m, ok := e.(map[string]any); ok {
					list[i] = normalized(m)
				} else {
					list[i] = e
				}
			}
			out[k] = list
		default:
			out[k] = x
		}
	}
	return out
}

func assertPlan(t *testing.T, got, want exchange.Plan) {
	t.Helper()
	if !reflect.DeepEqual(got.Exam, want.Exam) {
		t.Errorf("exam:\n got %+v\nwant %+v", got.Exam, want.Exam)
	}
	if !reflect.DeepEqual(got.Types, want.Types) {
		t.Errorf("types:\n got %+v\nwant %+v", got.Types, want.Types)
	}
	if len(got.Questions) != len(want.Questions) {
		t.Fatalf("got %d questions, want %d (warnings %+v)", len(got.Questions), len(want.Questions), got.Warnings)
	}
	for i := range want.Questions {
		if !reflect.DeepEqual(got.Questions[i], want.Questions[i]) {
			t.Errorf("question %d:\n got %#v\nwant %#v", i+1, got.Questions[i], want.Questions[i])
		}
	}
	if len(got.Warnings) != 0 {
		t.Errorf("warnings: %+v", got.Warnings)
	}
}

// rezip copies a zip archive keeping the entries keep accepts.
func rezip(t testing.TB, b []byte, keep func(string) bool) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, f := range zr.File {
		if !keep(f.Name) {
			continue
		}
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create(f.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, r); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
