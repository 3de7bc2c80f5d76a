package answersheet_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/assessd/assessd/internal/answersheet"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/platform/ids"
)

// longExam has more questions than fit on one page.
func longExam() fixture {
	f := newFixture()
	for range 4 {
		f.questions = append(f.questions, f.questions...)
	}
	for i := range f.questions {
		f.questions[i].ID = ids.New(ids.Question)
		f.questions[i].Options = slices.Clone(f.questions[i].Options) // the copies share them
	}
	return f
}

func TestComputeLayoutPaginates(t *testing.T) {
	f := longExam()
	l, err := answersheet.ComputeLayout(f.exam, f.questions)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Pages) < 2 {
		t.Fatalf("%d questions on %d page(s)", len(f.questions), len(l.Pages))
	}
	seen := map[string]bool{}
	hashes := map[string]bool{}
	number := 0
	for pi, p := range l.Pages {
		if p.Number != pi+1 || hashes[p.Hash] {
			t.Errorf("page %d: number %d, hash %s (seen before: %v)", pi, p.Number, p.Hash, hashes[p.Hash])
		}
		hashes[p.Hash] = true
		bottom := 0.0
		for _, it := range p.Items {
			if it.Number <= number {
				t.Errorf("question %s numbered %d after %d", it.QuestionID, it.Number, number)
			}
			number = it.Number
			seen[it.QuestionID] = true
			top, end := extent(it)
			if top < bottom || top < 55 || end > 280 {
				t.Errorf("page %d: question %d spans %.1f–%.1f mm, after %.1f mm", p.Number, it.Number, top, end, bottom)
			}
			bottom = end
		}
	}
	for _, q := range f.questions {
		if seen[q.ID] == (q.Type == assessment.TypeFileUpload) {
			t.Errorf("question %s (%s) on the sheet: %v", q.ID, q.Type, seen[q.ID])
		}
	}

	again, _ := answersheet.ComputeLayout(f.exam, f.questions)
	if again.Pages[0].Hash != l.Pages[0].Hash {
		t.Error("the same questions give another layout hash")
	}
	f.questions[0].Options[1].ID = "renamed"
	changed, _ := answersheet.ComputeLayout(f.exam, f.questions)
	if changed.Pages[0].Hash == l.Pages[0].Hash || changed.Pages[1].Hash != l.Pages[1].Hash {
		t.Error("renaming an option on page 1 must change page 1's hash and only that")
	}
}

func extent(it answersheet.Item) (top, bottom float64) {
	if it.Kind == answersheet.KindWritten {
		return it.Box.Y, it.Box.Y + it.Box.H
	}
	b := it.Bubbles[0]
	return b.Center.Y - b.Radius, b.Center.Y + b.Radius
}

func TestReadSecondPage(t *testing.T) {
	f := longExam()
	pages := renderPages(t, f, f.student)
	l, err := answersheet.ComputeLayout(f.exam, f.questions)
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != len(l.Pages) {
		t.Fatalf("rendered %d pages, layout has %d", len(pages), len(l.Pages))
	}
	first := l.Pages[1].Items[0]
	if first.Kind == answersheet.KindWritten {
		t.Fatalf("test assumes page 2 starts with a bubble row, got %s", first.Type)
	}
	qi := 0
	for i, q := range f.questions {
		if q.ID == first.QuestionID {
			qi = i
		}
	}
	marked := fillBubbles(t, f, pages[1], []mark{{qi, first.Bubbles[1].ChoiceID, 30}})
	r, err := answersheet.NewReader(f.exam, f.questions)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.ReadPage(photograph(t, marked, 4, 0.9, 7))
	if err != nil {
		t.Fatal(err)
	}
	if res.Sheet.Page != 2 || res.Sheet.LayoutHash != l.Pages[1].Hash {
		t.Fatalf("sheet = %+v, want page 2 with hash %s", res.Sheet, l.Pages[1].Hash)
	}
	got := res.Answers[0]
	if got.QuestionID != first.QuestionID || got.Value != first.Bubbles[1].ChoiceID || got.NeedsReview {
		t.Fatalf("first answer of page 2 = %+v, want %s = %s", got, first.QuestionID, first.Bubbles[1].ChoiceID)
	}
}

func TestRenderRejects(t *testing.T) {
	f := newFixture()
	onlineOnly := []assessment.SheetQuestion{{ID: ids.New(ids.Question), Type: assessment.TypeFileUpload}}
	oneOption := []assessment.SheetQuestion{{ID: ids.New(ids.Question), Type: assessment.TypeMultipleChoice, Options: options(1)}}
	for name, tc := range map[string]struct {
		exam      assessment.Exam
		students  []answersheet.Student
		questions []assessment.SheetQuestion
	}{
		"nothing on paper": {f.exam, nil, onlineOnly},
		"one option":       {f.exam, nil, oneOption},
		"not an exam id":   {assessment.Exam{ID: "exam-1"}, nil, f.questions},
		"not a user id":    {f.exam, []answersheet.Student{{UserID: "bob", Name: "Bob"}}, f.questions},
		"no questions":     {f.exam, nil, nil},
	} {
		var out bytes.Buffer
		if err := answersheet.Render(&out, tc.exam, tc.students, tc.questions); err == nil || out.Len() > 0 {
			t.Errorf("%s: Render wrote %d bytes, error %v", name, out.Len(), err)
		}
	}
	if _, err := answersheet.ComputeLayout(f.exam, onlineOnly); !errors.Is(err, answersheet.ErrNothingToPrint) {
		t.Errorf("ComputeLayout(file uploads only) = %v, want ErrNothingToPrint", err)
	}
}
