package exchange_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// playerCase is a response to one exported item and the score assessd's
// JSONata condition gives it (points × 0 or 1). unanchored marks a case
// where the player deviates from QTI: qti-components 7.27.4 runs
// qti-pattern-match as an unanchored JavaScript RegExp, while QTI patterns
// are XML Schema regular expressions, which match the whole string. There
// the player is expected to award the points for a response that merely
// contains an accepted answer; a fixed player fails the test, so the
// marks can go.
type playerCase struct {
	item       string
	response   any // string, []string or nil (no response)
	want       float64
	unanchored bool
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
		{"qst_01", "b", 2, false}, {"qst_01", "X_312063", 2, false}, {"qst_01", "a", 0, false}, {"qst_01", nil, 0, false},
		{"qst_02", []string{"he", "ne"}, 3, false}, {"qst_02", []string{"ne", "he"}, 3, false}, {"qst_02", []string{"he"}, 0, false}, {"qst_02", []string{"he", "ne", "o"}, 0, false},
		{"qst_03", "true", 1, false}, {"qst_03", "false", 0, false},
		{"qst_04", "Albany", 1.5, false}, {"qst_04", "  ALBANY ", 1.5, false}, {"qst_04", "albany   city", 1.5, false}, {"qst_04", "a$b.c*", 1.5, false},
		{"qst_04", "Albanyx", 0, true}, {"qst_04", "xAlbany", 0, true}, {"qst_04", "aXb.c*", 0, false}, {"qst_04", "albanycity", 0, true},
		{"qst_04", "Alb any", 0, false},
		{"qst_05", "Na", 1, false}, {"qst_05", "na", 0, false}, {"qst_05", " Na ", 1, false},
		{"qst_06", "9.81", 2, false}, {"qst_06", "9.86", 2, false}, {"qst_06", "9.76", 2, false}, {"qst_06", "9.87", 0, false}, {"qst_06", "10", 0, false},
		{"qst_07", "4", 1, false}, {"qst_07", "4.0000001", 0, false}, {"qst_07", "5", 0, false},
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
		want := c.want
		if c.unanchored {
			want = 1.5 // the points of qst_04
		}
		if g.Error != "" || g.Score == nil || *g.Score != want {
			score := "none"
			if g.Score != nil {
				score = fmt.Sprint(*g.Score)
			}
			t.Errorf("%s answered %v: player scored %s (error %q), want %v (assessd: %v)", c.item, c.response, score, g.Error, want, c.want)
		}
	}
}
