package answersheet

import "errors"

// Errors about an upload as a whole; an API maps them to 4xx responses.
var (
	// ErrTooLarge is an upload over MaxUploadBytes or an image over
	// MaxPixels.
	ErrTooLarge = errors.New("answer sheet upload is too large")
	// ErrUnsupportedFormat is an upload that is not PNG, JPEG or PDF.
	ErrUnsupportedFormat = errors.New("answer sheet upload is not a PNG, JPEG or PDF file")
	// ErrCorruptImage is a PNG or JPEG that does not decode, such as a
	// truncated file.
	ErrCorruptImage = errors.New("answer sheet image cannot be decoded")
	// ErrUnreadablePDF is a PDF that cannot be rasterized: damaged,
	// encrypted, or too slow to render.
	ErrUnreadablePDF = errors.New("answer sheet PDF cannot be read")
	// ErrTooManyPages is a PDF with more than MaxPDFPages pages.
	ErrTooManyPages = errors.New("answer sheet PDF has too many pages")
)

// ErrPDFToolMissing means pdfinfo or pdftoppm (Debian package poppler-utils)
// is not installed: a deployment fault, not the uploader's.
var ErrPDFToolMissing = errors.New("answersheet: pdftoppm/pdfinfo (poppler-utils) not installed")

// Errors about one page; a scan reports them per page and never guesses
// which student a page belongs to.
var (
	// ErrNoCornerMarks means the four corner marks were not found: the page
	// is not an answer sheet, is cut off, or is too dark or blurred.
	ErrNoCornerMarks = errors.New("the four corner marks of the answer sheet were not found")
	// ErrNoQRCode means the corner marks were found but the QR code could
	// not be decoded.
	ErrNoQRCode = errors.New("the answer sheet's QR code cannot be read")
	// ErrBadSheetID means the QR code was read but is not a valid answer
	// sheet identifier (not ours, or its checksum does not match).
	ErrBadSheetID = errors.New("the answer sheet's QR code is not a valid sheet identifier")
	// ErrForeignExam means the sheet was printed for another exam.
	ErrForeignExam = errors.New("the answer sheet belongs to another exam")
	// ErrStaleSheet means the sheet was printed before the exam's questions
	// changed, so its bubbles no longer match the questions.
	ErrStaleSheet = errors.New("the answer sheet was printed before the exam's questions changed")
)
