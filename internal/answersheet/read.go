package answersheet

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"math"
	"slices"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"
	"github.com/makiuchi-d/gozxing/qrcode/decoder"

	"github.com/assessd/assessd/internal/assessment"
)

// Answer is what was read from one bubble row.
type Answer struct {
	QuestionID string
	// Value is in the question type's answer shape: the chosen option id
	// (multiple_choice), the chosen ids (multiple_select), a boolean
	// (true_false); nil when a single-choice row has no or several marks.
	Value any
	// Confidence is from 0 to 1: how clearly every bubble of the row is
	// either filled or empty.
	Confidence float64
	// NeedsReview asks a person to look: nothing marked, several marks in a
	// single-choice row, or a faint mark.
	NeedsReview bool
	// Reason says why NeedsReview is set: "blank", "multiple" or "faint".
	Reason string
}

// WrittenAnswer is a written answer box cut out of the page, for a vision
// model to read.
type WrittenAnswer struct {
	QuestionID string
	Type       string
	PNG        []byte // greyscale, about 150 dpi, the box and a 1 mm margin
}

// PageResult is what was read from one page.
type PageResult struct {
	Sheet   SheetID
	Answers []Answer        // the page's bubble rows, in order
	Written []WrittenAnswer // the page's written boxes, in order
}

// Reader reads the pages of one exam's answer sheets. It is safe for
// concurrent use.
type Reader struct {
	layout Layout
}

// NewReader prepares to read sheets printed for exam with these questions
// (as passed to Render).
func NewReader(exam assessment.Exam, questions []assessment.SheetQuestion) (*Reader, error) {
	l, err := ComputeLayout(exam, questions)
	if err != nil {
		return nil, err
	}
	return &Reader{layout: l}, nil
}

// Mark thresholds on a bubble's fill above the page's blank level, where 1
// is solid ink: from markedAt a bubble is filled; between faintAt and
// markedAt it is a faint mark a person should look at.
const (
	markedAt = 0.40
	faintAt  = 0.12
	// maxBlank caps the measured blank level, for pages where most
	// bubbles are filled.
	maxBlank = 0.30
	// minContrast is the least difference, in grey levels, between paper
	// and the corner marks' ink for the page to be read.
	minContrast = 60
	// cropPxPerMM is the resolution of written-answer crops (152 dpi).
	cropPxPerMM = 6.0
)

// ReadPage reads one page image. A page that cannot be attributed to a
// student of this exam returns one of ErrNoCornerMarks, ErrNoQRCode,
// ErrBadSheetID, ErrForeignExam or ErrStaleSheet; nothing is guessed.
func (r *Reader) ReadPage(img image.Image) (PageResult, error) {
	g := toGray(img)
	marks, ok := findMarks(g)
	if !ok {
		return PageResult{}, ErrNoCornerMarks
	}
	h, id, err := r.orient(g, marks)
	if err != nil {
		return PageResult{}, err
	}
	if id.ExamID != r.layout.ExamID {
		return PageResult{}, ErrForeignExam
	}
	if id.Page > len(r.layout.Pages) || r.layout.Pages[id.Page-1].Hash != id.LayoutHash {
		return PageResult{}, ErrStaleSheet
	}
	page := r.layout.Pages[id.Page-1]
	res := PageResult{Sheet: id}
	lv := measureLevels(g, h)
	if lv.paper-lv.ink < minContrast {
		// The QR code decoded, yet the marks are not dark where the
		// transform puts them: it is off, and bubbles would be misread.
		return PageResult{}, ErrNoCornerMarks
	}
	rows := make([][]float64, len(page.Items)) // bubble fills, nil for boxes
	var fills []float64
	for j, it := range page.Items {
		if it.Kind == KindWritten {
			crop, err := encodePNG(warp(g, h, Rect{it.Box.X - 1, it.Box.Y - 1, it.Box.W + 2, it.Box.H + 2}, cropPxPerMM))
			if err != nil {
				return PageResult{}, err
			}
			res.Written = append(res.Written, WrittenAnswer{QuestionID: it.QuestionID, Type: it.Type, PNG: crop})
			continue
		}
		rows[j] = make([]float64, len(it.Bubbles))
		for i, b := range it.Bubbles {
			rows[j][i] = lv.fill(g, h, b)
		}
		fills = append(fills, rows[j]...)
	}
	blank := blankLevel(fills)
	for j, it := range page.Items {
		if rows[j] != nil {
			res.Answers = append(res.Answers, decide(it, rows[j], blank))
		}
	}
	return res, nil
}

// orient tries the four ways the photo may be turned and keeps the one
// whose QR code decodes: the marks alone are symmetric.
func (r *Reader) orient(g *image.Gray, marks [4]Point) (homography, SheetID, error) {
	errQR := ErrNoQRCode
	for _, turn := range [4]int{0, 2, 1, 3} {
		var to [4]Point
		for i := range 4 {
			to[i] = marks[(i+turn)%4]
		}
		h, ok := solveHomography(markCenters, to)
		if !ok {
			continue
		}
		text, ok := readQR(g, h)
		if !ok {
			continue
		}
		id, err := ParseSheetID(text)
		if err != nil {
			errQR = err
			continue
		}
		return h, id, nil
	}
	return homography{}, SheetID{}, errQR
}

// qrSides are the module counts the QR code can have, most likely first:
// version 5 for a student's sheet, 4 for one with a name box (see qrLevel),
// then the neighbours in case the payload ever grows or shrinks.
var qrSides = []int{37, 33, 29, 41, 25, 45}

// readQR reads the QR code where the layout put it. It first samples the
// module grid directly through the transform, which is exact when the marks
// are and needs no finder patterns, then falls back to the library's own
// detector on the area, which tolerates a slightly wrong transform.
func readQR(g *image.Gray, h homography) (string, bool) {
	if lv := measureLevels(g, h); lv.paper-lv.ink >= minContrast {
		threshold := (lv.paper + lv.ink) / 2
		for _, n := range qrSides {
			m := qrSize / float64(n)
			grid := make([][]bool, n)
			for y := range grid {
				grid[y] = make([]bool, n)
				for x := range grid[y] {
					var sum float64
					for _, d := range [3]float64{0.35, 0.5, 0.65} {
						for _, e := range [3]float64{0.35, 0.5, 0.65} {
							sum += sample(g, h, Point{qrX + (float64(x)+d)*m, qrY + (float64(y)+e)*m})
						}
					}
					grid[y][x] = sum/9 < threshold
				}
			}
			if res, err := decoder.NewDecoder().DecodeBoolMap(grid, nil); err == nil {
				return res.GetText(), true
			}
		}
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(warp(g, h, Rect{qrX - 4, qrY - 4, qrSize + 8, qrSize + 8}, 8))
	if err != nil {
		return "", false
	}
	res, err := qrcode.NewQRCodeReader().Decode(bmp, map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_TRY_HARDER: true})
	if err != nil {
		return "", false
	}
	return res.GetText(), true
}

// levels are the page's own paper and ink brightness, so fills compare
// alike under any lighting.
type levels struct{ paper, ink float64 }

func measureLevels(g *image.Gray, h homography) levels {
	var paper, ink []float64
	for y := paperStrip.Y; y <= paperStrip.Y+paperStrip.H; y += 0.5 {
		for x := paperStrip.X; x <= paperStrip.X+paperStrip.W; x += 1 {
			paper = append(paper, sample(g, h, Point{x, y}))
		}
	}
	for _, c := range markCenters {
		for d := -markSize / 4; d <= markSize/4; d += 0.5 {
			for e := -markSize / 4; e <= markSize/4; e += 0.5 {
				ink = append(ink, sample(g, h, Point{c.X + d, c.Y + e}))
			}
		}
	}
	return levels{paper: quantile(paper, 0.9), ink: quantile(ink, 0.5)}
}

// fill is the mean darkness of the bubble's inside, 0 paper to 1 ink. The
// printed outline is left out: only the inner 60% of the radius counts.
func (lv levels) fill(g *image.Gray, h homography, b Bubble) float64 {
	const step = 0.2
	r := b.Radius * 0.6
	var sum float64
	n := 0
	for dy := -r; dy <= r; dy += step {
		for dx := -r; dx <= r; dx += step {
			if dx*dx+dy*dy > r*r {
				continue
			}
			v := sample(g, h, Point{b.Center.X + dx, b.Center.Y + dy})
			sum += math.Min(1, math.Max(0, (lv.paper-v)/(lv.paper-lv.ink)))
			n++
		}
	}
	return sum / float64(n)
}

// blankLevel is the page's empty-bubble fill (the printed letter, toner,
// paper texture): the lower quartile of all bubbles, as most bubbles are
// empty.
func blankLevel(fills []float64) float64 {
	if len(fills) == 0 {
		return 0
	}
	return math.Min(quantile(fills, 0.25), maxBlank)
}

// decide turns a row's fills into an answer.
func decide(it Item, fills []float64, blank float64) Answer {
	a := Answer{QuestionID: it.QuestionID, Confidence: 1}
	var marked []string
	faint := false
	for i, f := range fills {
		s := (f - blank) / (1 - blank)
		a.Confidence = math.Min(a.Confidence, clarity(s))
		switch {
		case s >= markedAt:
			marked = append(marked, it.Bubbles[i].ChoiceID)
		case s >= faintAt:
			faint = true
		}
	}
	switch {
	case it.Kind == KindMultiple:
		if marked == nil {
			marked = []string{}
		}
		a.Value = marked
	case len(marked) == 1 && it.Type == assessment.TypeTrueFalse:
		a.Value = marked[0] == "true"
	case len(marked) == 1:
		a.Value = marked[0]
	}
	switch {
	case len(marked) == 0 && !faint:
		a.NeedsReview, a.Reason = true, "blank"
	case len(marked) > 1 && it.Kind == KindSingle:
		a.NeedsReview, a.Reason = true, "multiple"
	case faint:
		a.NeedsReview, a.Reason = true, "faint"
	}
	a.Confidence = math.Round(a.Confidence*100) / 100
	return a
}

// clarity is how surely a bubble scoring s is filled or empty: from 0.5 at
// a threshold to 1 a tenth of the scale beyond it, and below 0.5 inside the
// faint band, down to 0 in its middle.
func clarity(s float64) float64 {
	if s >= markedAt || s < faintAt {
		d := math.Min(math.Abs(s-markedAt), math.Abs(s-faintAt))
		return 0.5 + 0.5*math.Min(1, d/0.1)
	}
	half := (markedAt - faintAt) / 2
	return 0.5 * (1 - math.Min(s-faintAt, markedAt-s)/half)
}

// sample is the photo's brightness at a page position.
func sample(g *image.Gray, h homography, p Point) float64 {
	x, y := h.apply(p)
	return at(g, x, y)
}

func quantile(v []float64, q float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

func encodePNG(img image.Image) ([]byte, error) {
	var b bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&b, img); err != nil {
		return nil, fmt.Errorf("answersheet: crop: %w", err)
	}
	return b.Bytes(), nil
}
