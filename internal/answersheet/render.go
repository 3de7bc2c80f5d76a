package answersheet

import (
	"fmt"
	"io"

	"github.com/go-pdf/fpdf"
	"github.com/skip2/go-qrcode"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"

	"github.com/assessd/assessd/internal/assessment"
	"github.com/assessd/assessd/internal/platform/ids"
)

// Student is whom a printed sheet is for.
type Student struct {
	UserID string // a "usr_" id
	Name   string
}

// qrLevel is the QR error correction level. The library's High is the
// standard's level Q: it recovers 25% damage (a pen stroke, a fold), and the
// 84-character payload still fits version 5, whose 37 modules are 0.8 mm at
// qrSize, big enough for phone photos.
const qrLevel = qrcode.High

// Render writes a printable A4 PDF with one sheet per student, each sheet as
// many pages as the layout needs. With no students it writes one sheet with
// an empty name box and no user in its QR code.
func Render(w io.Writer, exam assessment.Exam, students []Student, questions []assessment.SheetQuestion) error {
	l, err := ComputeLayout(exam, questions)
	if err != nil {
		return err
	}
	if len(students) == 0 {
		students = []Student{{}}
	}
	for _, s := range students {
		if s.UserID != "" && !ids.Valid(ids.User, s.UserID) {
			return fmt.Errorf("answersheet: %q is not a user id", s.UserID)
		}
	}
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.SetAutoPageBreak(false, 0)
	pdf.SetMargins(0, 0, 0)
	pdf.AddUTF8FontFromBytes("go", "", goregular.TTF)
	pdf.AddUTF8FontFromBytes("go", "B", gobold.TTF)
	pdf.SetTitle(exam.Name+" — answer sheets", true)
	for _, s := range students {
		for _, p := range l.Pages {
			id := SheetID{ExamID: exam.ID, UserID: s.UserID, Page: p.Number, LayoutHash: p.Hash}
			if err := renderPage(pdf, exam, s, p, len(l.Pages), id); err != nil {
				return err
			}
		}
	}
	return pdf.Output(w)
}

func renderPage(pdf *fpdf.Fpdf, exam assessment.Exam, s Student, p Page, pages int, id SheetID) error {
	pdf.AddPage()
	pdf.SetFillColor(0, 0, 0)
	for _, c := range markCenters {
		pdf.Rect(c.X-markSize/2, c.Y-markSize/2, markSize, markSize, "F")
	}
	if err := drawQR(pdf, id.String()); err != nil {
		return err
	}

	pdf.SetTextColor(0, 0, 0)
	pdf.SetFont("go", "B", 14)
	pdf.Text(20, 25, fit(pdf, exam.Name, 138))
	pdf.SetFont("go", "", 11)
	if s.Name != "" {
		pdf.Text(20, 33, fit(pdf, "Student: "+s.Name, 138))
	} else {
		pdf.Text(20, 34, "Name:")
		pdf.SetDrawColor(80, 80, 80)
		pdf.SetLineWidth(0.3)
		pdf.Rect(34, 28, 120, 8, "D")
	}
	pdf.SetFont("go", "", 8)
	pdf.Text(20, 42, fmt.Sprintf("Page %d of %d. Fill bubbles completely with a dark pen; rows marked * take every correct option.", p.Number, pages))
	pdf.Text(20, 46, "Write inside the boxes. Do not write on the corner squares or the code.")

	for _, it := range p.Items {
		drawItem(pdf, it)
	}
	return pdf.Error()
}

func drawQR(pdf *fpdf.Fpdf, payload string) error {
	q, err := qrcode.New(payload, qrLevel)
	if err != nil {
		return fmt.Errorf("answersheet: QR code: %w", err)
	}
	q.DisableBorder = true // the page around it is the quiet zone
	bm := q.Bitmap()
	m := qrSize / float64(len(bm))
	pdf.SetFillColor(0, 0, 0)
	// One rectangle per horizontal run: no hairline gaps between modules
	// when the PDF is rasterized, and a smaller file.
	for y, row := range bm {
		for x := 0; x < len(row); {
			if !row[x] {
				x++
				continue
			}
			end := x
			for end < len(row) && row[end] {
				end++
			}
			pdf.Rect(qrX+float64(x)*m, qrY+float64(y)*m, float64(end-x)*m, m+0.01, "F")
			x = end
		}
	}
	return nil
}

func drawItem(pdf *fpdf.Fpdf, it Item) {
	label := fmt.Sprintf("%d.", it.Number)
	if it.Kind == KindMultiple {
		label = fmt.Sprintf("%d.*", it.Number)
	}
	pdf.SetTextColor(0, 0, 0)
	pdf.SetFont("go", "B", 10)
	pdf.SetDrawColor(60, 60, 60)
	pdf.SetLineWidth(0.3)
	if it.Kind == KindWritten {
		pdf.Text(numberX, it.Box.Y+4.5, label)
		pdf.Rect(it.Box.X, it.Box.Y, it.Box.W, it.Box.H, "D")
		return
	}
	pdf.Text(numberX, it.Bubbles[0].Center.Y+1.3, label)
	// Letters are light so a blank bubble stays light; the reader measures
	// the page's own blank level anyway.
	pdf.SetFont("go", "", 6.5)
	pdf.SetTextColor(150, 150, 150)
	for _, b := range it.Bubbles {
		pdf.Circle(b.Center.X, b.Center.Y, b.Radius, "D")
		pdf.SetXY(b.Center.X-b.Radius, b.Center.Y-b.Radius)
		pdf.CellFormat(2*b.Radius, 2*b.Radius, b.Label, "", 0, "CM", false, 0, "")
	}
}

// fit shortens s with an ellipsis until it is at most width millimetres
// wide in the current font.
func fit(pdf *fpdf.Fpdf, s string, width float64) string {
	if pdf.GetStringWidth(s) <= width {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && pdf.GetStringWidth(string(r)+"…") > width {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}
