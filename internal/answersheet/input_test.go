package answersheet_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"testing"

	"github.com/go-pdf/fpdf"

	"github.com/assessd/assessd/internal/answersheet"
	"github.com/assessd/assessd/internal/platform/ids"
)

func encodedPNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	img.Set(1, 1, color.White)
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// bombPNG is a valid PNG header declaring width×height 8-bit grey pixels,
// with no pixel data: decoding it would allocate for the declared size.
func bombPNG(width, height uint32) []byte { return pngHeader(width, height, 8, 0) }

// pngHeader is a PNG header of the given bit depth and colour type (PNG's
// codes: 0 grey, 2 RGB, 6 RGBA), with no pixel data.
func pngHeader(width, height uint32, depth, colourType byte) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], width)
	binary.BigEndian.PutUint32(ihdr[4:], height)
	ihdr[8], ihdr[9] = depth, colourType
	chunk := append([]byte("IHDR"), ihdr...)
	b.Write(binary.BigEndian.AppendUint32(nil, uint32(len(ihdr))))
	b.Write(chunk)
	b.Write(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(chunk)))
	return b.Bytes()
}

func TestDecodeImage(t *testing.T) {
	okPNG := encodedPNG(t, 300, 400)
	var okJPEG bytes.Buffer
	if err := jpeg.Encode(&okJPEG, image.NewGray(image.Rect(0, 0, 300, 400)), nil); err != nil {
		t.Fatal(err)
	}
	var gif bytes.Buffer
	gif.WriteString("GIF89a")
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"PNG", okPNG, nil},
		{"JPEG", okJPEG.Bytes(), nil},
		{"truncated PNG", okPNG[:len(okPNG)/2], answersheet.ErrCorruptImage},
		{"truncated JPEG", okJPEG.Bytes()[:okJPEG.Len()/2], answersheet.ErrCorruptImage},
		{"text", []byte("hello, this is not an image"), answersheet.ErrUnsupportedFormat},
		{"empty", nil, answersheet.ErrUnsupportedFormat},
		{"GIF", gif.Bytes(), answersheet.ErrUnsupportedFormat},
		{"over 20 MiB", make([]byte, answersheet.MaxUploadBytes+1), answersheet.ErrTooLarge},
		{"decompression bomb", bombPNG(100_000, 100_000), answersheet.ErrTooLarge},
		{"zero width", bombPNG(0, 10), answersheet.ErrCorruptImage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := answersheet.DecodeImage(tc.data)
			if !errors.Is(err, tc.want) {
				t.Fatalf("DecodeImage error = %v, want %v", err, tc.want)
			}
			if err == nil && img.Bounds().Dx() != 300 {
				t.Fatalf("decoded %v, want 300×400", img.Bounds())
			}
		})
	}
}

func TestSplitPDFPageSizeAndDamage(t *testing.T) {
	f := newFixture()
	var pdf bytes.Buffer
	if err := answersheet.Render(&pdf, f.exam, nil, f.questions); err != nil {
		t.Fatal(err)
	}
	var pages []int
	err := answersheet.SplitPDF(context.Background(), pdf.Bytes(), func(page int, img image.Image) error {
		if img.Bounds().Dy() != 1754 {
			t.Errorf("page %d is %v, want 1754 px high", page, img.Bounds())
		}
		pages = append(pages, page)
		return nil
	})
	if err != nil || len(pages) != 1 {
		t.Fatalf("SplitPDF = pages %v, %v; want one page", pages, err)
	}

	for name, data := range map[string][]byte{
		"damaged PDF": append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("garbage "), 100)...),
		"truncated":   pdf.Bytes()[:pdf.Len()/3],
		"over 20 MiB": append([]byte("%PDF-1.7\n"), make([]byte, answersheet.MaxUploadBytes)...),
	} {
		err := answersheet.SplitPDF(context.Background(), data, func(int, image.Image) error { return nil })
		if !errors.Is(err, answersheet.ErrUnreadablePDF) && !errors.Is(err, answersheet.ErrTooLarge) {
			t.Errorf("%s: error = %v, want ErrUnreadablePDF or ErrTooLarge", name, err)
		}
	}
}

func TestSplitPDFPageOrderAndLimit(t *testing.T) {
	f := newFixture()
	// Twelve students make a twelve-page PDF: pdftoppm pads page numbers
	// to two digits, and the pages must still come in order.
	students := make([]answersheet.Student, 12)
	for i := range students {
		students[i] = answersheet.Student{UserID: ids.New(ids.User), Name: "Student"}
	}
	var pdf bytes.Buffer
	if err := answersheet.Render(&pdf, f.exam, students, f.questions); err != nil {
		t.Fatal(err)
	}
	r, err := answersheet.NewReader(f.exam, f.questions)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = answersheet.SplitPDF(context.Background(), pdf.Bytes(), func(page int, img image.Image) error {
		if page > 3 && page < 11 {
			return nil // reading three pages at each end is enough to see the order
		}
		res, err := r.ReadPage(img)
		if err != nil {
			return err
		}
		got = append(got, res.Sheet.UserID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{students[0].UserID, students[1].UserID, students[2].UserID, students[10].UserID, students[11].UserID}
	if len(got) != len(want) {
		t.Fatalf("read %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("page %d is %s's sheet, want %s's", i, got[i], want[i])
		}
	}
}

// A PDF of several render chunks: SplitPDFPages gives every page in order
// as a PNG, also with other splits running; SplitPDF stops at the first
// error its callback returns; both leave no temporary file behind.
func TestSplitPDFChunksAndCleanUp(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	const pages = 19 // three chunks of pdftoppm's, the last one short
	pdf := barsPDF(t, pages)
	// Two at once, as concurrent scans on one worker: they share the
	// process's render slots.
	errs := make(chan error, 2)
	for range cap(errs) {
		go func() { errs <- splitInOrder(pdf, pages) }()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}

	stop := errors.New("stop")
	var seen []int
	err := answersheet.SplitPDF(context.Background(), pdf, func(page int, _ image.Image) error {
		seen = append(seen, page)
		if page == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || len(seen) != 10 {
		t.Fatalf("SplitPDF = %v after pages %v, want the callback's error after page 10", err, seen)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("left in the temporary folder: %v", left)
	}
}

// barsPDF is a PDF of n A4 pages, each with a bar as long as its page
// number.
func barsPDF(t *testing.T, n int) []byte {
	t.Helper()
	doc := fpdf.New("P", "mm", "A4", "")
	for i := range n {
		doc.AddPage()
		doc.Rect(10, 10, float64(10+8*i), 20, "F")
	}
	var pdf bytes.Buffer
	if err := doc.Output(&pdf); err != nil {
		t.Fatal(err)
	}
	return pdf.Bytes()
}

// splitInOrder splits a barsPDF of n pages with SplitPDFPages and checks
// that every page comes as a 1754 px high PNG, in order.
func splitInOrder(pdf []byte, n int) error {
	var widths []int
	err := answersheet.SplitPDFPages(context.Background(), pdf, func(page int, data []byte) error {
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("page %d: %w", page, err)
		}
		if page != len(widths)+1 || img.Bounds().Dy() != 1754 {
			return fmt.Errorf("page %d of %v after %d pages", page, img.Bounds(), len(widths))
		}
		widths = append(widths, darkRun(img))
		return nil
	})
	if err != nil || len(widths) != n {
		return fmt.Errorf("SplitPDFPages = %d pages, %v; want %d", len(widths), err, n)
	}
	for i := 1; i < n; i++ {
		if widths[i] <= widths[i-1] {
			return fmt.Errorf("bars %v: pages out of order", widths)
		}
	}
	return nil
}

// darkRun is the length of the dark run along the row through the middle
// of the page's first bar.
func darkRun(img image.Image) int {
	b := img.Bounds()
	y := b.Min.Y + b.Dy()*15/297
	n := 0
	for x := b.Min.X; x < b.Max.X; x++ {
		if r, _, _, _ := img.At(x, y).RGBA(); r < 0x8000 {
			n++
		}
	}
	return n
}

func TestSplitPDFTooManyPages(t *testing.T) {
	doc := fpdf.New("P", "mm", "A4", "")
	for range answersheet.MaxPDFPages + 1 {
		doc.AddPage()
	}
	var pdf bytes.Buffer
	if err := doc.Output(&pdf); err != nil {
		t.Fatal(err)
	}
	called := false
	err := answersheet.SplitPDF(context.Background(), pdf.Bytes(), func(int, image.Image) error { called = true; return nil })
	if !errors.Is(err, answersheet.ErrTooManyPages) || called {
		t.Fatalf("SplitPDF = %v (pages delivered: %v), want ErrTooManyPages before rendering", err, called)
	}
}

func FuzzDecodeImage(f *testing.F) {
	f.Add(encodedPNG(f, 3, 2))
	f.Add(bombPNG(100_000, 100_000))
	f.Add(bombPNG(1, 1))
	var j bytes.Buffer
	if err := jpeg.Encode(&j, image.NewGray(image.Rect(0, 0, 8, 8)), nil); err != nil {
		f.Fatal(err)
	}
	f.Add(j.Bytes())
	fx := newFixture()
	r, err := answersheet.NewReader(fx.exam, fx.questions)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		img, err := answersheet.DecodeImage(data)
		if err != nil {
			for _, known := range []error{answersheet.ErrTooLarge, answersheet.ErrUnsupportedFormat, answersheet.ErrCorruptImage} {
				if errors.Is(err, known) {
					return
				}
			}
			t.Fatalf("untyped error %v", err)
		}
		b := img.Bounds()
		if b.Dx()*b.Dy() > answersheet.MaxPixels || b.Empty() {
			t.Fatalf("decoded %v", b)
		}
		// Whatever decodes is read without a panic, as an unidentifiable page.
		if b.Dx()*b.Dy() <= 1_000_000 {
			if _, err := r.ReadPage(img); !errors.Is(err, answersheet.ErrNoCornerMarks) &&
				!errors.Is(err, answersheet.ErrNoQRCode) && !errors.Is(err, answersheet.ErrBadSheetID) {
				t.Fatalf("ReadPage on fuzzed image: %v", err)
			}
		}
	})
}
