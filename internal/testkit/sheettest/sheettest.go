// Package sheettest fills in printed answer sheets the way students and
// phones do, for the tests and benchmarks of reading them: pen marks in
// bubbles, handwriting in boxes, and photos that are rotated, scaled, noisy
// and JPEG-compressed.
package sheettest

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/disintegration/imaging"

	"github.com/assessd/assessd/internal/answersheet"
	"github.com/assessd/assessd/internal/assessment"
)

// Mark is a pen mark in one bubble: the question and choice ids, and the
// ink's grey level (0 is black).
type Mark struct {
	QuestionID string
	ChoiceID   string
	Ink        uint8
}

// Render prints the sheets of students (none: one sheet with a name box) and
// rasterizes them as pdftoppm does for an uploaded PDF.
func Render(t testing.TB, exam assessment.Exam, questions []assessment.SheetQuestion, students ...answersheet.Student) []image.Image {
	t.Helper()
	var pdf bytes.Buffer
	if err := answersheet.Render(&pdf, exam, students, questions); err != nil {
		t.Fatal(err)
	}
	var pages []image.Image
	err := answersheet.SplitPDF(context.Background(), pdf.Bytes(), func(_ int, img image.Image) error {
		pages = append(pages, img)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// Fill draws marks on a copy of a raster of a whole page, at the layout's
// positions, slightly off-centre and smaller than the bubble like a hand.
// The marks must be of questions printed on that page.
func Fill(t testing.TB, exam assessment.Exam, questions []assessment.SheetQuestion, page image.Image, marks []Mark) *image.RGBA {
	t.Helper()
	l := layout(t, exam, questions)
	out := image.NewRGBA(page.Bounds())
	draw.Draw(out, out.Bounds(), page, page.Bounds().Min, draw.Src)
	scale := float64(out.Bounds().Dx()) / 210
	for _, m := range marks {
		b := bubble(t, l, m.QuestionID, m.ChoiceID)
		disc(out, (b.Center.X+0.3)*scale, (b.Center.Y-0.2)*scale, b.Radius*0.85*scale, color.Gray{m.Ink})
	}
	return out
}

// Write draws a wavy line of handwriting into the written-answer box of
// questionID on img, a raster of a whole page.
func Write(t testing.TB, exam assessment.Exam, questions []assessment.SheetQuestion, img draw.Image, questionID string) {
	t.Helper()
	scale := float64(img.Bounds().Dx()) / 210
	for _, p := range layout(t, exam, questions).Pages {
		for _, it := range p.Items {
			if it.QuestionID != questionID {
				continue
			}
			for x := it.Box.X + 5; x < it.Box.X+60; x += 1.5 {
				disc(img, x*scale, (it.Box.Y+it.Box.H/2+3*math.Sin(x))*scale, 0.4*scale, color.Gray{20})
			}
			return
		}
	}
	t.Fatalf("no box for %s in the layout", questionID)
}

func layout(t testing.TB, exam assessment.Exam, questions []assessment.SheetQuestion) answersheet.Layout {
	t.Helper()
	l, err := answersheet.ComputeLayout(exam, questions)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func bubble(t testing.TB, l answersheet.Layout, questionID, choiceID string) answersheet.Bubble {
	t.Helper()
	for _, p := range l.Pages {
		for _, it := range p.Items {
			for _, b := range it.Bubbles {
				if it.QuestionID == questionID && b.ChoiceID == choiceID {
					return b
				}
			}
		}
	}
	t.Fatalf("no bubble %s/%s in the layout", questionID, choiceID)
	return answersheet.Bubble{}
}

func disc(img draw.Image, cx, cy, r float64, c color.Color) {
	for y := int(cy - r - 1); y <= int(cy+r+1); y++ {
		for x := int(cx - r - 1); x <= int(cx+r+1); x++ {
			if dx, dy := float64(x)+0.5-cx, float64(y)+0.5-cy; dx*dx+dy*dy <= r*r {
				img.Set(x, y, c)
			}
		}
	}
}

// PhotoJPEG turns a scan into something like a phone photo: rotated by
// degrees, scaled, noisy (seeded) and JPEG-compressed.
func PhotoJPEG(t testing.TB, img image.Image, degrees, scale float64, seed uint64) []byte {
	t.Helper()
	rot := imaging.Rotate(img, degrees, color.RGBA{235, 232, 225, 255})
	b := rot.Bounds()
	small := imaging.Resize(rot, int(float64(b.Dx())*scale), 0, imaging.Linear)
	rng := rand.New(rand.NewPCG(seed, seed))
	for i := 0; i < len(small.Pix); i += 4 {
		n := rng.IntN(61) - 30
		for c := range 3 {
			small.Pix[i+c] = uint8(max(0, min(255, int(small.Pix[i+c])+n)))
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, small, &jpeg.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Photograph is PhotoJPEG decoded as an upload is.
func Photograph(t testing.TB, img image.Image, degrees, scale float64, seed uint64) image.Image {
	t.Helper()
	out, err := answersheet.DecodeImage(PhotoJPEG(t, img, degrees, scale, seed))
	if err != nil {
		t.Fatal(err)
	}
	return out
}
