package assessment_test

import (
	"testing"

	"github.com/assessd/assessd/internal/assessment"
)

// TestTotalsAreDecimalSums: a result's score and maximum are the sums a
// person would write, whether rules score the submission (0.1 + 0.2 is
// 0.3, where floats make 0.30000000000000004) or AI grading finishes it
// (0.3 + 0.4 is 0.7, not 0.7000000000000001).
func TestTotalsAreDecimalSums(t *testing.T) {
	f := newFixture(t)
	for i, points := range []float64{0.1, 0.1, 0.2, 0.5} { // true/false, true/false, custom, essay
		if _, err := f.content.UpdateQuestion(f.staff, f.exam.ID, f.qs[i].ID, assessment.QuestionPatch{Points: &points}); err != nil {
			t.Fatal(err)
		}
	}
	scored := f.submit(t, false) // the first and the custom question right
	if scored.Score != 0.3 || scored.MaxScore != 0.9 {
		t.Errorf("rules scored %v of %v, want 0.3 of 0.9", scored.Score, scored.MaxScore)
	}
	graded := f.submit(t, true)
	if err := f.content.RecordGrade(f.staff, graded.ID, f.qs[3].ID, 0.4, "Fair.", nil); err != nil {
		t.Fatal(err)
	}
	finished, err := f.content.FinishResult(f.staff, graded.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if finished.Score != 0.7 || finished.MaxScore != 0.9 {
		t.Errorf("graded %v of %v, want 0.7 of 0.9", finished.Score, finished.MaxScore)
	}
}
