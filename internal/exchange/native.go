package exchange

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/assessd/assessd/internal/assessment"
)

// NativeSchema identifies version 1 of the native document. A reader
// refuses any other value: a later version gets a new identifier and its
// own reader.
const NativeSchema = "assessd.exam/v1"

// NativeJSONSchema is the JSON Schema (draft 2020-12) of the native
// document; import validates every document against it.
//
//go:embed schema/assessd.exam.v1.json
var NativeJSONSchema []byte

// Document is the native exam document: lossless, versioned JSON.
type Document struct {
	Schema        string        `json:"schema"`
	Exam          DocExam       `json:"exam"`
	QuestionTypes []DocType     `json:"questionTypes"`
	Questions     []DocQuestion `json:"questions"`
}

// DocExam is the exam's own content.
type DocExam struct {
	ID              string `json:"id,omitempty"`
	Name            string `json:"name"`
	Description     string `json:"description"`
	Language        string `json:"language"`
	DurationMinutes int    `json:"durationMinutes"`
}

// DocType is a custom question type definition, in the shape of the
// question type API.
type DocType struct {
	ID                 string                `json:"id"`
	Key                string                `json:"key"`
	Name               string                `json:"name"`
	Description        string                `json:"description"`
	ConfigSchema       map[string]any        `json:"configSchema"`
	ResponseProcessing DocResponseProcessing `json:"responseProcessing"`
	Grading            DocGrading            `json:"grading"`
	Public             bool                  `json:"public"`
	Deprecated         bool                  `json:"deprecated"`
}

// DocResponseProcessing holds a rule-scored type's JSONata condition.
type DocResponseProcessing struct {
	Condition string `json:"condition"`
}

// DocGrading says whether a type is graded by AI, and with which files.
type DocGrading struct {
	Enabled    bool   `json:"enabled"`
	FileInputs string `json:"fileInputs"`
}

// DocQuestion is one question. Type is a built-in key or the ID of an
// entry of QuestionTypes, exactly as the question names its type.
type DocQuestion struct {
	ID       string         `json:"id,omitempty"`
	Type     string         `json:"type"`
	TypeKey  string         `json:"typeKey,omitempty"`
	Revision int            `json:"revision"`
	Prompt   string         `json:"prompt"`
	Config   map[string]any `json:"config"`
	Points   float64        `json:"points"`
}

// currentRevision is the revision of content that carries none: a QTI
// item, a question stored without one.
const currentRevision = 1

// NewDocument builds the native document of an exam and its questions in
// order. Custom types travel inline, deprecated ones included (spec 2.4:
// they keep exporting unchanged). A question whose type no longer
// resolves keeps its type id and has no definition beside it; importing
// it yields a warning.
func NewDocument(exam assessment.Exam, questions []assessment.Question) Document {
	doc := Document{Schema: NativeSchema, QuestionTypes: []DocType{}, Questions: make([]DocQuestion, 0, len(questions)),
		Exam: DocExam{ID: exam.ID, Name: exam.Name, Description: exam.Description, Language: exam.Language,
			DurationMinutes: exam.DurationMinutes}}
	seen := map[string]bool{}
	for _, q := range questions {
		dq := DocQuestion{ID: q.ID, Type: q.Type, Revision: max(q.Revision, currentRevision), Prompt: q.Prompt,
			Config: q.Config, Points: q.Points}
		if dq.Config == nil {
			dq.Config = map[string]any{}
		}
		if q.Def != nil {
			dq.TypeKey = q.Def.Key
			if !q.Def.BuiltIn && !seen[q.Def.ID] {
				seen[q.Def.ID] = true
				doc.QuestionTypes = append(doc.QuestionTypes, docType(*q.Def))
			}
		}
		doc.Questions = append(doc.Questions, dq)
	}
	return doc
}

func docType(t assessment.TypeDef) DocType {
	return DocType{ID: t.ID, Key: t.Key, Name: t.Name, Description: t.Description, ConfigSchema: t.ConfigSchema,
		ResponseProcessing: DocResponseProcessing{Condition: t.Condition},
		Grading:            DocGrading{Enabled: t.GradingEnabled, FileInputs: t.FileInputs},
		Public:             t.Public, Deprecated: t.Deprecated}
}

// WriteNative writes the document as indented JSON.
func WriteNative(w io.Writer, doc Document) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write native document: %w", err)
	}
	return nil
}

var nativeSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(NativeJSONSchema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("assessd.exam.v1.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("assessd.exam.v1.json")
})

// The native schema's maxItems.
const (
	maxQuestionTypes = 500
	maxQuestions     = 1000
)

// Go and JavaScript write any float64 in at most 26 characters, with an
// exponent of at most 324 (5e-324); a number literal beyond either bound
// is refused.
const (
	maxNumberLen      = 32
	maxNumberExponent = 324
)

// decodeNative validates a native document against NativeJSONSchema and
// decodes it.
func decodeNative(b []byte) (Document, error) {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return Document{}, malformed("is not valid JSON").WithCause(err)
	}
	m, ok := inst.(map[string]any)
	if ok && m["schema"] != NativeSchema {
		return Document{}, malformed("must be a native document with \"schema\": %q", NativeSchema)
	}
	if err := checkBeforeValidation(m); err != nil {
		return Document{}, err
	}
	sch, err := nativeSchema()
	if err != nil {
		return Document{}, fmt.Errorf("compile native schema: %w", err)
	}
	if err := sch.Validate(inst); err != nil {
		return Document{}, malformed("does not match the %s schema: %s", NativeSchema, schemaMessage(err))
	}
	var doc Document
	if err := json.Unmarshal(b, &doc); err != nil {
		return Document{}, malformed("does not match the %s schema", NativeSchema).WithCause(err)
	}
	return doc, nil
}

// checkBeforeValidation refuses what makes validation expensive: more
// entries than maxItems allows (validation goes on through every entry
// after maxItems failed), and number literals no float64 needs (it
// compares numbers as exact rationals: 1e999999 costs a million-digit
// power of ten at every comparison).
func checkBeforeValidation(m map[string]any) error {
	types, _ := m["questionTypes"].([]any)
	questions, _ := m["questions"].([]any)
	switch {
	case len(types) > maxQuestionTypes:
		return malformed("holds %d question types; a document holds at most %d", len(types), maxQuestionTypes)
	case len(questions) > maxQuestions:
		return malformed("holds %d questions; a document holds at most %d", len(questions), maxQuestions)
	case !plausibleNumbers(m):
		return malformed("holds a number longer than %d characters or with an exponent beyond ±%d",
			maxNumberLen, maxNumberExponent)
	}
	return nil
}

// plausibleNumbers reports whether every number literal in v is within
// maxNumberLen and maxNumberExponent.
func plausibleNumbers(v any) bool {
	switch v := v.(type) {
	case json.Number:
		if len(v) > maxNumberLen {
			return false
		}
		if i := strings.IndexAny(string(v), "eE"); i >= 0 {
			exp, err := strconv.Atoi(string(v[i+1:]))
			return err == nil && exp >= -maxNumberExponent && exp <= maxNumberExponent
		}
	case []any:
		for _, e := range v {
			if !plausibleNumbers(e) {
				return false
			}
		}
	case map[string]any:
		for _, e := range v {
			if !plausibleNumbers(e) {
				return false
			}
		}
	}
	return true
}

var printer = message.NewPrinter(language.English)

// schemaMessage names the first offending place and why, in schema terms
// only.
func schemaMessage(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "invalid"
	}
	leaf := ve
	for len(leaf.Causes) > 0 {
		leaf = leaf.Causes[0]
	}
	return fmt.Sprintf("at /%s: %s", strings.Join(leaf.InstanceLocation, "/"), leaf.ErrorKind.LocalizedString(printer))
}

// Plan turns the document into an import plan. A question whose type is
// neither built in nor defined in the document is left out with a
// warning.
func (doc Document) Plan() Plan {
	p := Plan{Exam: ExamSpec{Name: doc.Exam.Name, Description: doc.Exam.Description, Language: doc.Exam.Language,
		DurationMinutes: doc.Exam.DurationMinutes}}
	for _, t := range doc.QuestionTypes {
		p.Types = append(p.Types, TypeSpec{Ref: t.ID, Key: t.Key, Name: t.Name, Description: t.Description,
			ConfigSchema: t.ConfigSchema, Condition: t.ResponseProcessing.Condition,
			GradingEnabled: t.Grading.Enabled, FileInputs: t.Grading.FileInputs, Public: t.Public,
			Deprecated: t.Deprecated})
	}
	defined := p.typeRefs()
	for i, q := range doc.Questions {
		item := q.ID
		if item == "" {
			item = fmt.Sprintf("questions/%d", i)
		}
		if !defined[q.Type] && !isBuiltin(q.Type) {
			p.warn(item, "left out: its question type %q is neither built in nor defined in questionTypes", truncate(q.Type, 64))
			continue
		}
		rev := q.Revision
		if rev == 0 {
			rev = currentRevision
		}
		p.Questions = append(p.Questions, QuestionSpec{SourceID: q.ID, Type: q.Type, Prompt: q.Prompt,
			Config: q.Config, Points: q.Points, Revision: rev})
	}
	return p
}
