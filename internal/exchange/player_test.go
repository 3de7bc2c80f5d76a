package exchange_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/assessment/expr"
	"github.com/assessd/assessd/internal/testkit/ziptest"
)

// playerCase is a response to one exported item and the score it earns.
// value is the answer assessd receives where it differs from the QTI
// response: an option's own id, a number.
type playerCase struct {
	item     string
	response any // string, []string or nil (no response)
	want     float64
	value    any
}

// TestIndependentPlayerScoresLikeAssessd scores exported items with
// Citolab's QTI 3 components in Chromium (tools/qti-check, installed by
// `make qti-check`). It runs when QTI_CHECK=1, as the player needs Node
// and Chromium.
func TestIndependentPlayerScoresLikeAssessd(t *testing.T) {
	if os.Getenv("QTI_CHECK") != "1" {
		t.Skip("set QTI_CHECK=1 (make qti-check) to score items with the independent QTI 3 player")
	}
	cases := []playerCase{
		{"qst_01", "b", 2, nil}, {"qst_01", "X_312063", 2, "1 c"}, {"qst_01", "a", 0, nil}, {"qst_01", nil, 0, nil},
		{"qst_02", []string{"he", "ne"}, 3, nil}, {"qst_02", []string{"ne", "he"}, 3, nil}, {"qst_02", []string{"he"}, 0, nil}, {"qst_02", []string{"he", "ne", "o"}, 0, nil},
		{"qst_03", "true", 1, true}, {"qst_03", "false", 0, false},
		{"qst_04", "Albany", 1.5, nil}, {"qst_04", "  ALBANY ", 1.5, nil}, {"qst_04", "albany   city", 1.5, nil}, {"qst_04", "a$b.c*", 1.5, nil},
		{"qst_04", "Albanyx", 0, nil}, {"qst_04", "xAlbany", 0, nil}, {"qst_04", "aXb.c*", 0, nil}, {"qst_04", "albanycity", 0, nil},
		{"qst_04", "Alb any", 0, nil}, {"qst_04", "Albany x", 0, nil}, {"qst_04", "x Albany", 0, nil}, {"qst_04", "ALBANY\tCity", 1.5, nil},
		{"qst_04", "albany city albany", 0, nil},
		{"qst_05", "Na", 1, nil}, {"qst_05", "na", 0, nil}, {"qst_05", " Na ", 1, nil}, {"qst_05", "Na Na", 0, nil},
		{"qst_06", "9.81", 2, 9.81}, {"qst_06", "9.86", 2, 9.86}, {"qst_06", "9.76", 2, 9.76}, {"qst_06", "9.87", 0, 9.87}, {"qst_06", "10", 0, 10.0},
		{"qst_07", "4", 1, 4.0}, {"qst_07", "4.0000001", 0, 4.0000001}, {"qst_07", "5", 0, 5.0},
	}
	_, questions := sampleExam()
	for _, c := range cases {
		if got := assessdScore(t, questions, c); got != c.want {
			t.Fatalf("%s answered %v: assessd scores %v, the case says %v", c.item, c.response, got, c.want)
		}
	}
	pkg := exportQTI(t, sampleDocument())
	zr, err := zip.NewReader(bytes.NewReader(pkg), int64(len(pkg)))
	if err != nil {
		t.Fatal(err)
	}
	items := map[string]string{}
	for _, f := range zr.File {
		r, _ := f.Open()
		b, _ := io.ReadAll(r)
		r.Close()
		items[f.Name] = string(b)
	}
	type in struct {
		ID       int    `json:"id"`
		XML      string `json:"xml"`
		Response any    `json:"response"`
	}
	var input []in
	for i, c := range cases {
		input = append(input, in{ID: i, XML: items["items/"+c.item+".xml"], Response: c.response})
	}
	body, _ := json.Marshal(input)
	cmd := exec.Command("node", "score.mjs")
	cmd.Dir = filepath.Join("..", "..", "tools", "qti-check")
	cmd.Stdin = bytes.NewReader(body)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run the player: %v", err)
	}
	var got []struct {
		ID    int      `json:"id"`
		Score *float64 `json:"score"`
		Error string   `json:"error"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("player output %s: %v", out, err)
	}
	for _, g := range got {
		c := cases[g.ID]
		if g.Error != "" || g.Score == nil || *g.Score != c.want {
			score := "none"
			if g.Score != nil {
				score = fmt.Sprint(*g.Score)
			}
			t.Errorf("%s answered %v: player scored %s (error %q), assessd %v", c.item, c.response, score, g.Error, c.want)
		}
	}
}

// assessdScore scores a case with the built-in type's condition, as
// assessd does when a result is submitted.
func assessdScore(t *testing.T, questions []assessment.Question, c playerCase) float64 {
	t.Helper()
	i := slices.IndexFunc(questions, func(q assessment.Question) bool { return q.ID == c.item })
	q := questions[i]
	def, _ := assessment.Builtin(q.Type)
	value := c.value
	if value == nil {
		value = c.response
	}
	if list, ok := value.([]string); ok {
		items := make([]any, len(list))
		for i, s := range list {
			items[i] = s
		}
		value = items
	}
	e, err := expr.Compile(def.Condition)
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.Eval(context.Background(), "org_player", map[string]any{"answer": map[string]any{"value": value, "files": []any{}}, "config": q.Config})
	if errors.Is(err, expr.ErrUndefined) || value == nil {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	frac, err := assessment.Fraction(v)
	if err != nil {
		t.Fatal(err)
	}
	return frac * q.Points
}

// TestImportsPackageWrittenByCitolab imports a QTI 3 package written by
// another tool: Citolab's qti-convert (tools/qti-check, pinned) converts
// the QTI 2.1 fixture, and the result must import as the same questions
// as the 2.1 package. It runs with the player test (QTI_CHECK=1).
func TestImportsPackageWrittenByCitolab(t *testing.T) {
	if os.Getenv("QTI_CHECK") != "1" {
		t.Skip("set QTI_CHECK=1 (make qti-check) to convert a package with Citolab's qti-convert")
	}
	qti21 := ziptest.Dir(t, "testdata/qti21")
	in := filepath.Join(t.TempDir(), "package.zip")
	if err := os.WriteFile(in, qti21, 0o644); err != nil {
		t.Fatal(err)
	}
	tool := filepath.Join("..", "..", "tools", "qti-check")
	cmd := exec.Command("node", filepath.Join(tool, "node_modules", "@citolab", "qti-convert", "dist", "qti-convert-pkg.mjs"), in)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("qti-convert: %v\n%s", err, out)
	}
	converted, err := os.ReadFile(strings.TrimSuffix(in, ".zip") + "-qti3.zip")
	if err != nil {
		t.Fatal(err)
	}
	if !zipHasQTI3(t, converted) {
		t.Fatal("the converted package has no QTI 3 item")
	}
	got, want := importBytes(t, converted), importBytes(t, qti21)
	if !reflect.DeepEqual(got.Questions, want.Questions) || len(got.Warnings) != 0 {
		t.Errorf("QTI 3 from Citolab imports as\n%#v\nwarnings %+v\nthe QTI 2.1 original as\n%#v", got.Questions, got.Warnings, want.Questions)
	}
}

// zipHasQTI3 reports whether an archive holds a QTI 3 item.
func zipHasQTI3(t *testing.T, pkg []byte) bool {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(pkg), int64(len(pkg)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		r, _ := f.Open()
		b, _ := io.ReadAll(r)
		r.Close()
		if bytes.Contains(b, []byte("<qti-assessment-item")) {
			return true
		}
	}
	return false
}
