package answersheet

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/platform/ids"
)

// Kind is how a question is answered on paper.
type Kind int

// The kinds of answer area.
const (
	// KindSingle is a bubble row where exactly one bubble is expected.
	KindSingle Kind = iota + 1
	// KindMultiple is a bubble row where any number of bubbles may be filled.
	KindMultiple
	// KindWritten is a box written in by hand and read later by a vision
	// model.
	KindWritten
)

// Point is a position on the page in millimetres from its top-left corner.
type Point struct{ X, Y float64 }

// Rect is an area on the page in millimetres.
type Rect struct{ X, Y, W, H float64 }

// Bubble is one choice of a bubble row.
type Bubble struct {
	ChoiceID string // the option id the answer names ("true"/"false" for true_false)
	Label    string // printed inside the bubble: A, B, C… or T, F
	Center   Point
	Radius   float64
}

// Item is one question's answer area.
type Item struct {
	QuestionID string
	Number     int    // the question's 1-based position in the exam
	Type       string // the question's type key
	Kind       Kind
	Bubbles    []Bubble // choice kinds
	Box        Rect     // KindWritten
}

// Page is one printed page of a student's sheet.
type Page struct {
	Number int    // 1-based
	Hash   string // fingerprint of the items, printed in the QR code
	Items  []Item
}

// Layout is where every answer area is on every page of an exam's sheet. It
// is the same for every student.
type Layout struct {
	ExamID string
	Pages  []Page
}

// Page geometry in millimetres. Changing any of it changes layoutVersion, so
// sheets printed before no longer pass the layout check.
const (
	layoutVersion = "a4-v1"
	pageW, pageH  = 210.0, 297.0
	markSize      = 8.0  // side of the solid square corner marks
	markCenter    = 12.0 // distance of a mark's centre from the two nearest page edges
	qrSize        = 30.0
	qrX, qrY      = 164.0, 20.0
	// paperStrip is kept blank so the reader can measure the paper's
	// brightness.
	paperStripY, paperStripH  = 52.0, 3.0
	contentTop, contentBottom = 58.0, 278.0
	numberX                   = 18.0
	firstBubbleX              = 40.0
	bubbleStep                = 7.5
	bubbleRadius              = 2.5
	rowH                      = 10.0
	boxX, boxW                = 36.0, 154.0
	shortBoxH, longBoxH       = 12.0, 60.0
	// maxPages bounds a student's sheet; 500 questions fit in fewer.
	maxPages = 99
)

// markCenters are the corner mark centres in page order: top-left,
// top-right, bottom-right, bottom-left.
var markCenters = [4]Point{
	{markCenter, markCenter}, {pageW - markCenter, markCenter},
	{pageW - markCenter, pageH - markCenter}, {markCenter, pageH - markCenter},
}

var paperStrip = Rect{X: 20, Y: paperStripY, W: 130, H: paperStripH}

// ErrNothingToPrint means no question of the exam can be answered on paper.
var ErrNothingToPrint = errors.New("the exam has no question that can be answered on paper")

// ComputeLayout places the exam's questions, in order, on as many pages as
// they need. Choice types get a bubble row (multiple_select allows several
// bubbles); short_text and numeric a short box; essay and custom types a
// tall box. file_upload questions are answered online and left off the
// sheet; numbers still follow the exam's order so they match the exam paper.
func ComputeLayout(exam assessment.Exam, questions []assessment.SheetQuestion) (Layout, error) {
	if !ids.Valid(ids.Exam, exam.ID) {
		return Layout{}, fmt.Errorf("answersheet: exam id %q is not an exam id", exam.ID)
	}
	l := Layout{ExamID: exam.ID}
	page := Page{Number: 1}
	y := contentTop
	for i, q := range questions {
		it, h, err := place(q, i+1)
		if err != nil {
			return Layout{}, err
		}
		if h == 0 {
			continue
		}
		if y+h > contentBottom {
			l.Pages = append(l.Pages, page)
			page, y = Page{Number: page.Number + 1}, contentTop
		}
		it.moveTo(y)
		page.Items = append(page.Items, it)
		y += h
	}
	l.Pages = append(l.Pages, page)
	if len(l.Pages) == 1 && len(page.Items) == 0 {
		return Layout{}, ErrNothingToPrint
	}
	if len(l.Pages) > maxPages {
		return Layout{}, fmt.Errorf("answersheet: the sheet would need more than %d pages", maxPages)
	}
	for i := range l.Pages {
		l.Pages[i].Hash = l.Pages[i].fingerprint()
	}
	return l, nil
}

// place builds q's answer area at the top of the content area and returns
// the height it takes, 0 when it is not on paper.
func place(q assessment.SheetQuestion, number int) (Item, float64, error) {
	it := Item{QuestionID: q.ID, Number: number, Type: q.Type}
	var choices []assessment.SheetOption
	switch q.Type {
	case assessment.TypeFileUpload:
		return it, 0, nil
	case assessment.TypeMultipleChoice, assessment.TypeMultipleSelect:
		it.Kind, choices = KindSingle, q.Options
		if q.Type == assessment.TypeMultipleSelect {
			it.Kind = KindMultiple
		}
		if len(choices) < 2 || len(choices) > 20 {
			return it, 0, fmt.Errorf("answersheet: question %s has %d options, want 2 to 20", q.ID, len(choices))
		}
	case assessment.TypeTrueFalse:
		it.Kind, choices = KindSingle, []assessment.SheetOption{{ID: "true", Text: "T"}, {ID: "false", Text: "F"}}
	case assessment.TypeShortText, assessment.TypeNumeric:
		it.Kind, it.Box = KindWritten, Rect{X: boxX, Y: 1, W: boxW, H: shortBoxH}
		return it, shortBoxH + 2, nil
	default: // essay and custom types: free writing the vision model reads
		it.Kind, it.Box = KindWritten, Rect{X: boxX, Y: 1, W: boxW, H: longBoxH}
		return it, longBoxH + 2, nil
	}
	for j, c := range choices {
		label := string(rune('A' + j))
		if q.Type == assessment.TypeTrueFalse {
			label = c.Text
		}
		it.Bubbles = append(it.Bubbles, Bubble{ChoiceID: c.ID, Label: label,
			Center: Point{firstBubbleX + float64(j)*bubbleStep, rowH / 2}, Radius: bubbleRadius})
	}
	return it, rowH, nil
}

// moveTo shifts an item placed at the top of the content area to y.
func (it *Item) moveTo(y float64) {
	it.Box.Y += y
	for i := range it.Bubbles {
		it.Bubbles[i].Center.Y += y
	}
}

// fingerprint is the first 32 bits of a SHA-256 over the geometry version
// and every answer area, so a sheet printed before a question, option or
// order changed is detected instead of misread.
func (p Page) fingerprint() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%d\n", layoutVersion, p.Number)
	for _, it := range p.Items {
		fmt.Fprintf(&b, "%s|%d|%s|%d|%.2f,%.2f,%.2f,%.2f", it.QuestionID, it.Number, it.Type, it.Kind,
			it.Box.X, it.Box.Y, it.Box.W, it.Box.H)
		for _, c := range it.Bubbles {
			fmt.Fprintf(&b, "|%q@%.2f,%.2f", c.ChoiceID, c.Center.X, c.Center.Y)
		}
		b.WriteByte('\n')
	}
	sum := sha256.Sum256([]byte(b.String()))
	return fmt.Sprintf("%X", sum[:4])
}
