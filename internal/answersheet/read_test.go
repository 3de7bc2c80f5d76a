package answersheet_test

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"reflect"
	"testing"

	"github.com/disintegration/imaging"

	"github.com/assessd/assessd/internal/answersheet"
	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/platform/ids"
	"github.com/assessd/assessd/internal/testkit/sheettest"
)

// fixture is an exam with every built-in type and the marks a student made.
type fixture struct {
	exam      assessment.Exam
	questions []assessment.SheetQuestion
	student   answersheet.Student
}

func options(n int) []assessment.SheetOption {
	out := make([]assessment.SheetOption, n)
	for i := range out {
		out[i] = assessment.SheetOption{ID: fmt.Sprintf("opt%d", i+1), Text: fmt.Sprintf("Option %d", i+1)}
	}
	return out
}

func newFixture() fixture {
	q := func(typ string, opts int) assessment.SheetQuestion {
		s := assessment.SheetQuestion{ID: ids.New(ids.Question), Type: typ, Prompt: "Prompt", Points: 1}
		if opts > 0 {
			s.Options = options(opts)
		}
		return s
	}
	return fixture{
		exam: assessment.Exam{ID: ids.New(ids.Exam), Name: "Physik-Klausur: Wellen & Optik"},
		questions: []assessment.SheetQuestion{
			q(assessment.TypeMultipleChoice, 4),  // 0: C
			q(assessment.TypeMultipleSelect, 5),  // 1: A, C, E
			q(assessment.TypeTrueFalse, 0),       // 2: F
			q(assessment.TypeShortText, 0),       // 3
			q(assessment.TypeMultipleChoice, 20), // 4: T, the last of twenty
			q(assessment.TypeNumeric, 0),         // 5
			q(assessment.TypeMultipleChoice, 3),  // 6: blank
			q(assessment.TypeMultipleChoice, 4),  // 7: A and D
			q(assessment.TypeFileUpload, 0),      // 8: not on paper
			q(assessment.TypeEssay, 0),           // 9
			q(assessment.TypeMultipleSelect, 4),  // 10: nothing
			q(assessment.TypeMultipleChoice, 4),  // 11: B firmly, D faintly
		},
		student: answersheet.Student{UserID: ids.New(ids.User), Name: "Zoë Ångström"},
	}
}

// marks are the bubbles the student fills: question index → choice ids, with
// their darkness (0 black ink).
type mark struct {
	q      int
	choice string
	ink    uint8
}

var studentMarks = []mark{
	{0, "opt3", 30},
	{1, "opt1", 30}, {1, "opt3", 60}, {1, "opt5", 30},
	{2, "false", 40},
	{4, "opt20", 30},
	{7, "opt1", 30}, {7, "opt4", 30},
	{11, "opt2", 30}, {11, "opt4", 200},
}

// want is what reading the marked sheet must give, per question index.
func (f fixture) want() []answersheet.Answer {
	id := func(i int) string { return f.questions[i].ID }
	return []answersheet.Answer{
		{QuestionID: id(0), Value: "opt3"},
		{QuestionID: id(1), Value: []string{"opt1", "opt3", "opt5"}},
		{QuestionID: id(2), Value: false},
		{QuestionID: id(4), Value: "opt20"},
		{QuestionID: id(6), NeedsReview: true, Reason: "blank"},
		{QuestionID: id(7), NeedsReview: true, Reason: "multiple"},
		{QuestionID: id(10), Value: []string{}, NeedsReview: true, Reason: "blank"},
		{QuestionID: id(11), Value: "opt2", NeedsReview: true, Reason: "faint"},
	}
}

func renderPages(t testing.TB, f fixture, students ...answersheet.Student) []image.Image {
	return sheettest.Render(t, f.exam, f.questions, students...)
}

// fillBubbles draws the marks, and handwriting in the essay box.
func fillBubbles(t testing.TB, f fixture, page image.Image, marks []mark) *image.RGBA {
	t.Helper()
	pen := make([]sheettest.Mark, len(marks))
	for i, m := range marks {
		pen[i] = sheettest.Mark{QuestionID: f.questions[m.q].ID, ChoiceID: m.choice, Ink: m.ink}
	}
	out := sheettest.Fill(t, f.exam, f.questions, page, pen)
	for _, q := range f.questions {
		if q.Type == assessment.TypeEssay {
			sheettest.Write(t, f.exam, f.questions, out, q.ID)
		}
	}
	return out
}

func photograph(t testing.TB, img image.Image, degrees, scale float64, seed uint64) image.Image {
	return sheettest.Photograph(t, img, degrees, scale, seed)
}

// keystone is a camera tilted towards the page's top: a perspective in
// which the top edge comes out p narrower than the bottom one.
func keystone(img *image.RGBA, p float64) *image.RGBA {
	b := img.Bounds()
	w, h := float64(b.Dx()), float64(b.Dy())
	out := image.NewRGBA(b)
	draw.Draw(out, b, image.White, image.Point{}, draw.Src)
	for y := range b.Dy() {
		for x := range b.Dx() {
			// Output to source is projective: both coordinates divided by
			// the same linear function of y.
			d := 1 - p*(1-float64(y)/h)
			sx, sy := w/2+(float64(x)-w/2)/d, h/2+(float64(y)-h/2)/d
			if sx >= 0 && sy >= 0 && sx < w && sy < h {
				copy(out.Pix[out.PixOffset(x, y):][:4], img.Pix[img.PixOffset(int(sx), int(sy)):][:4])
			}
		}
	}
	return out
}

func TestReadPage(t *testing.T) {
	f := newFixture()
	pages := renderPages(t, f, f.student)
	if len(pages) != 1 {
		t.Fatalf("rendered %d pages, want 1", len(pages))
	}
	marked := fillBubbles(t, f, pages[0], studentMarks)
	r, err := answersheet.NewReader(f.exam, f.questions)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		img  image.Image
	}{
		{"scan", marked},
		{"photo rotated 5° and scaled 80%", photograph(t, marked, 5, 0.8, 1)},
		{"photo rotated -7° and scaled 130%", photograph(t, marked, -7, 1.3, 2)},
		{"photo rotated 3° upside down", photograph(t, imaging.Rotate180(marked), 3, 1, 3)},
		{"photo turned 90°", photograph(t, imaging.Rotate90(marked), -4, 0.9, 4)},
		{"photo taken at an angle", photograph(t, keystone(marked, 0.15), 3, 1, 5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := r.ReadPage(tc.img)
			if err != nil {
				t.Fatal(err)
			}
			wantID := answersheet.SheetID{ExamID: f.exam.ID, UserID: f.student.UserID, Page: 1, LayoutHash: res.Sheet.LayoutHash}
			if res.Sheet != wantID {
				t.Errorf("sheet = %+v, want %+v", res.Sheet, wantID)
			}
			want := f.want()
			if len(res.Answers) != len(want) {
				t.Fatalf("got %d answers, want %d: %+v", len(res.Answers), len(want), res.Answers)
			}
			for i, got := range res.Answers {
				w := want[i]
				if got.QuestionID != w.QuestionID || !reflect.DeepEqual(got.Value, w.Value) ||
					got.NeedsReview != w.NeedsReview || got.Reason != w.Reason {
					t.Errorf("answer %d = %+v, want %+v", i, got, w)
				}
				if !got.NeedsReview && got.Confidence < 0.9 {
					t.Errorf("answer %d: confidence %.2f for a clear row", i, got.Confidence)
				}
				if got.Reason == "faint" && got.Confidence > 0.5 {
					t.Errorf("answer %d: confidence %.2f for a faint mark", i, got.Confidence)
				}
			}
			checkWritten(t, f, res.Written)
		})
	}
}

// checkWritten checks the crops: one per written question in order, the
// box's size at about 150 dpi, and the essay's handwriting inside.
func checkWritten(t *testing.T, f fixture, written []answersheet.WrittenAnswer) {
	t.Helper()
	var want []int
	for i, q := range f.questions {
		switch q.Type {
		case assessment.TypeShortText, assessment.TypeNumeric, assessment.TypeEssay:
			want = append(want, i)
		}
	}
	if len(written) != len(want) {
		t.Fatalf("got %d written answers, want %d", len(written), len(want))
	}
	for i, w := range written {
		q := f.questions[want[i]]
		if w.QuestionID != q.ID || w.Type != q.Type {
			t.Errorf("written %d is %s/%s, want %s/%s", i, w.QuestionID, w.Type, q.ID, q.Type)
		}
		img, err := png.Decode(bytes.NewReader(w.PNG))
		if err != nil {
			t.Fatal(err)
		}
		if got := img.Bounds().Dx(); got != 936 {
			t.Errorf("crop %d is %d px wide, want 936 (156 mm at 6 px/mm)", i, got)
		}
		if ink := darkFraction(img); (q.Type == assessment.TypeEssay) != (ink > 0.0005) {
			t.Errorf("crop %d (%s) has %.4f dark pixels inside the box", i, q.Type, ink)
		}
	}
}

// darkFraction is the share of dark pixels inside a crop, away from the
// box outline.
func darkFraction(img image.Image) float64 {
	b := img.Bounds()
	dark, n := 0, 0
	for y := b.Min.Y + 20; y < b.Max.Y-20; y++ {
		for x := b.Min.X + 20; x < b.Max.X-20; x++ {
			if g := color.GrayModel.Convert(img.At(x, y)).(color.Gray); g.Y < 100 {
				dark++
			}
			n++
		}
	}
	return float64(dark) / float64(n)
}

func TestReadPageUnidentifiable(t *testing.T) {
	f := newFixture()
	page := fillBubbles(t, f, renderPages(t, f, f.student)[0], studentMarks)
	scale := float64(page.Bounds().Dx()) / 210
	covered := image.NewRGBA(page.Bounds())
	draw.Draw(covered, covered.Bounds(), page, image.Point{}, draw.Src)
	// A sticker over the QR code.
	draw.Draw(covered, image.Rect(int(160*scale), int(17*scale), int(197*scale), int(53*scale)),
		image.NewUniform(color.Gray{240}), image.Point{}, draw.Src)
	blankPaper := image.NewGray(image.Rect(0, 0, 1240, 1754))
	draw.Draw(blankPaper, blankPaper.Bounds(), image.White, image.Point{}, draw.Src)

	changed := newFixture()
	changed.exam, changed.questions = f.exam, append([]assessment.SheetQuestion(nil), f.questions...)
	changed.questions[0].Options = options(5)
	other := newFixture()

	for _, tc := range []struct {
		name      string
		questions fixture
		img       image.Image
		want      error
	}{
		{"QR code covered", f, covered, answersheet.ErrNoQRCode},
		{"blank paper", f, blankPaper, answersheet.ErrNoCornerMarks},
		{"another exam's sheet", other, page, answersheet.ErrForeignExam},
		{"questions changed after printing", changed, page, answersheet.ErrStaleSheet},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := answersheet.NewReader(tc.questions.exam, tc.questions.questions)
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.ReadPage(tc.img)
			if !errors.Is(err, tc.want) {
				t.Fatalf("ReadPage = %+v, %v; want %v", res, err, tc.want)
			}
		})
	}
}
