package answersheet

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// Upload limits.
const (
	// MaxUploadBytes bounds one uploaded file (API.md: 20 MiB).
	MaxUploadBytes = 20 << 20
	// MaxPixels bounds a decoded image: a 48-megapixel phone photo passes,
	// a small file declaring a huge image (a decompression bomb) does not.
	MaxPixels = 50_000_000
	// MaxPDFPages bounds the pages of one PDF.
	MaxPDFPages = 200
	// pdfTimeout bounds rasterizing one PDF.
	pdfTimeout = 2 * time.Minute
	// pdfLongSide is the long side of a rasterized PDF page in pixels:
	// about 150 dpi for A4, whatever size the PDF declares.
	pdfLongSide = 1754
)

// DecodeImage decodes a PNG or JPEG upload. It checks the byte size, then the
// dimensions from the header, before decoding any pixels.
func DecodeImage(data []byte) (image.Image, error) {
	c, err := checkImage(data)
	if err != nil {
		return nil, err
	}
	img, err := c.decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptImage, err)
	}
	return img, nil
}

// checkedImage is what checkImage read of an image's header.
type checkedImage struct {
	decode func(io.Reader) (image.Image, error)
	memory int64 // PageMemory
}

// checkImage checks a PNG or JPEG upload's size, format, dimensions and
// the memory decoding it takes from its header, and returns its decoder.
func checkImage(data []byte) (checkedImage, error) {
	if len(data) > MaxUploadBytes {
		return checkedImage{}, ErrTooLarge
	}
	// Sniffed here rather than by image.DecodeConfig, whose formats are
	// whatever any linked package registered.
	decodeConfig, decode := png.DecodeConfig, png.Decode
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		decodeConfig, decode = jpeg.DecodeConfig, jpeg.Decode
	default:
		return checkedImage{}, ErrUnsupportedFormat
	}
	cfg, err := decodeConfig(bytes.NewReader(data))
	switch {
	case err != nil:
		return checkedImage{}, fmt.Errorf("%w: %v", ErrCorruptImage, err)
	case cfg.Width <= 0 || cfg.Height <= 0:
		return checkedImage{}, ErrCorruptImage
	case int64(cfg.Width)*int64(cfg.Height) > MaxPixels:
		return checkedImage{}, fmt.Errorf("%w: %d×%d pixels, at most %d", ErrTooLarge, cfg.Width, cfg.Height, MaxPixels)
	}
	memory, err := pageMemory(data, cfg)
	switch {
	case err != nil:
		return checkedImage{}, err
	case memory > MaxPageMemory:
		return checkedImage{}, fmt.Errorf("%w: %d MiB to decode, at most %d", ErrTooLarge, memory>>20, MaxPageMemory>>20)
	}
	return checkedImage{decode: decode, memory: memory}, nil
}

// CheckUpload checks one uploaded file without rendering it, so an API can
// refuse a bad upload at once: its size and format, an image's dimensions
// from its header, a PDF's page count (with pdfinfo). It returns the number
// of pages.
func CheckUpload(ctx context.Context, data []byte) (int, error) {
	if !bytes.HasPrefix(data, []byte("%PDF-")) {
		_, err := checkImage(data)
		return 1, err
	}
	if len(data) > MaxUploadBytes {
		return 0, ErrTooLarge
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, pdfTimeout)
	defer cancel()
	pages, err := withPDF(ctx, data, func(dir, in string) (int, error) { return checkedPageCount(ctx, in) })
	if err != nil && parent.Err() != nil {
		return 0, parent.Err()
	}
	return pages, err
}

// SplitPDF rasterizes a PDF in grey at about 150 dpi with pdftoppm and calls
// each with every page in order (1-based), stopping at the first error it
// returns. Pages are rendered in a private temporary directory that is
// removed afterwards; the tools run with a timeout and never through a
// shell.
func SplitPDF(ctx context.Context, data []byte, each func(page int, img image.Image) error) error {
	if len(data) > MaxUploadBytes {
		return ErrTooLarge
	}
	if !bytes.HasPrefix(data, []byte("%PDF-")) {
		return ErrUnsupportedFormat
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, pdfTimeout)
	defer cancel()
	_, err := withPDF(ctx, data, func(dir, in string) (int, error) {
		pages, err := checkedPageCount(ctx, in)
		if err != nil {
			return 0, err
		}
		return pages, rasterize(ctx, dir, in, pages, each)
	})
	if err != nil && parent.Err() != nil {
		return parent.Err() // the caller gave up: not the upload's fault
	}
	return err
}

// SplitPDFPages is SplitPDF giving each page as a greyscale PNG file, for a
// caller that stores pages rather than reading them at once.
func SplitPDFPages(ctx context.Context, data []byte, each func(page int, png []byte) error) error {
	var buf bytes.Buffer
	return SplitPDF(ctx, data, func(page int, img image.Image) error {
		buf.Reset()
		if err := pagePNG.Encode(&buf, img); err != nil {
			return fmt.Errorf("answersheet: page %d: %w", page, err)
		}
		return each(page, bytes.Clone(buf.Bytes()))
	})
}

// pagePNG encodes stored pages for speed: on a rendered sheet it takes
// about half the default level's time (6.7 against 11.9 ms) for a file 6 %
// larger.
var pagePNG = png.Encoder{CompressionLevel: png.BestSpeed}

// withPDF writes data to a private temporary directory, which is removed
// afterwards, and calls fn with the directory and the file's path.
func withPDF(ctx context.Context, data []byte, fn func(dir, in string) (int, error)) (int, error) {
	dir, err := os.MkdirTemp("", "answersheet-")
	if err != nil {
		return 0, fmt.Errorf("answersheet: %w", err)
	}
	defer func() {
		// The folder holds an uploaded sheet: an operator must hear of a
		// copy left on disk.
		if err := os.RemoveAll(dir); err != nil {
			slog.ErrorContext(ctx, "answersheet: remove temporary folder", "err", err)
		}
	}()
	in := filepath.Join(dir, "in.pdf")
	if err := os.WriteFile(in, data, 0o600); err != nil {
		return 0, fmt.Errorf("answersheet: %w", err)
	}
	return fn(dir, in)
}

// checkedPageCount is the page count of the PDF at path, at most
// MaxPDFPages.
func checkedPageCount(ctx context.Context, path string) (int, error) {
	pages, err := pdfPageCount(ctx, path)
	if err != nil {
		return 0, err
	}
	if pages > MaxPDFPages {
		return 0, fmt.Errorf("%w: %d pages, at most %d", ErrTooManyPages, pages, MaxPDFPages)
	}
	return pages, nil
}

var pagesLine = regexp.MustCompile(`(?m)^Pages:\s+(\d+)\s*$`)

func pdfPageCount(ctx context.Context, path string) (int, error) {
	out, err := poppler(ctx, "pdfinfo", path)
	if err != nil {
		return 0, err
	}
	m := pagesLine.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("%w: no page count", ErrUnreadablePDF)
	}
	n, err := strconv.Atoi(string(m[1]))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: no pages", ErrUnreadablePDF)
	}
	return n, nil
}

var errRenderingTooLong = fmt.Errorf("%w: rendering took too long", ErrUnreadablePDF)

// poppler runs a poppler-utils program. Its error output stays out of the
// returned error: it names temporary paths and says nothing the uploader
// can act on.
func poppler(ctx context.Context, tool string, args ...string) ([]byte, error) {
	path, err := exec.LookPath(tool)
	if err != nil {
		return nil, ErrPDFToolMissing
	}
	// G204: the tool is pdfinfo or pdftoppm and its arguments are numbers
	// and paths in our temporary folder, run without a shell.
	cmd := exec.CommandContext(ctx, path, args...) //nolint:gosec // G204, see above
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	switch {
	case ctx.Err() != nil:
		return nil, errRenderingTooLong
	case err != nil:
		return nil, fmt.Errorf("%w: %s failed", ErrUnreadablePDF, tool)
	}
	return out, nil
}
