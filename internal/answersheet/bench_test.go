package answersheet_test

import (
	"bytes"
	"context"
	"image"
	"testing"

	"github.com/assessd/assessd/internal/answersheet"
)

// BenchmarkReadPage measures reading an already rasterized page: corner
// marks, perspective, QR code, bubbles and written-box crops.
func BenchmarkReadPage(b *testing.B) {
	f := newFixture()
	scan := fillBubbles(b, f, renderPages(b, f, f.student)[0], studentMarks)
	for _, bc := range []struct {
		name string
		img  image.Image
	}{
		{"scan", scan},
		{"photo", photograph(b, scan, 5, 1.6, 1)}, // about 2000×2800, a JPEG's YCbCr
	} {
		b.Run(bc.name, func(b *testing.B) {
			r, err := answersheet.NewReader(f.exam, f.questions)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := r.ReadPage(bc.img); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
		})
	}
}

// BenchmarkReadPDFPage measures a one-page PDF from bytes to answers:
// pdfinfo and pdftoppm, PNG decoding, then reading.
func BenchmarkReadPDFPage(b *testing.B) {
	f := newFixture()
	var pdf bytes.Buffer
	if err := answersheet.Render(&pdf, f.exam, []answersheet.Student{f.student}, f.questions); err != nil {
		b.Fatal(err)
	}
	r, err := answersheet.NewReader(f.exam, f.questions)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		err := answersheet.SplitPDF(context.Background(), pdf.Bytes(), func(_ int, img image.Image) error {
			_, err := r.ReadPage(img)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
}
