package answersheet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"sync"
)

// PDF pages are rendered by pdftoppm as raw greyscale PGM, renderChunk
// pages per run and up to renderAhead runs at once ahead of the caller.
// Raw pixels cost nothing to decode, where pdftoppm's own PNG encoding took
// 95 of its 105 ms a page and x/image/tiff's decoding 9-13 ms; the chunks
// bound the temporary files (2.2 MB a page) to a few dozen pages and let
// the runs use every core.
const renderChunk = 8

var renderAhead = min(runtime.GOMAXPROCS(0), 4)

// rasterize renders pages 1 to pages of the PDF at in into dir and calls
// each with them in order, stopping at the first error. Every page file is
// removed once read, and no pdftoppm run outlives the call.
func rasterize(ctx context.Context, dir, in string, pages int, each func(page int, img image.Image) error) error {
	ctx, cancel := context.WithCancel(ctx)
	var runs sync.WaitGroup
	defer runs.Wait()
	defer cancel()
	chunks := (pages + renderChunk - 1) / renderChunk
	bounds := func(c int) (first, last int) { return c*renderChunk + 1, min((c+1)*renderChunk, pages) }
	rendered := make([]chan error, chunks)
	start := func(c int) {
		rendered[c] = make(chan error, 1)
		first, last := bounds(c)
		runs.Go(func() { rendered[c] <- renderPages(ctx, dir, in, c, first, last) })
	}
	for c := range min(renderAhead, chunks) {
		start(c)
	}
	for c := range chunks {
		if err := <-rendered[c]; err != nil {
			return err
		}
		if next := c + renderAhead; next < chunks {
			start(next)
		}
		first, last := bounds(c)
		if err := deliverPages(ctx, dir, c, first, last, each); err != nil {
			return err
		}
	}
	return nil
}

// renderSlots bounds the pdftoppm runs of the whole process to its cores:
// rendering is CPU-bound, and concurrent scans would otherwise multiply the
// runs (and their memory) by renderAhead.
var renderSlots = make(chan struct{}, runtime.GOMAXPROCS(0))

// renderPages renders pages first to last into dir as chunk c's files.
func renderPages(ctx context.Context, dir, in string, c, first, last int) error {
	select {
	case renderSlots <- struct{}{}:
		defer func() { <-renderSlots }()
	case <-ctx.Done():
		return errRenderingTooLong
	}
	_, err := poppler(ctx, "pdftoppm", "-gray", "-scale-to", strconv.Itoa(pdfLongSide),
		"-f", strconv.Itoa(first), "-l", strconv.Itoa(last), in, chunkRoot(dir, c))
	return err
}

// chunkRoot is the prefix of chunk c's files: pdftoppm names them
// <root>-<page>.pgm, the page number padded to the page count's width.
func chunkRoot(dir string, c int) string { return filepath.Join(dir, "c"+strconv.Itoa(c)) }

// deliverPages calls each with chunk c's pages, first to last, in order and
// removes their files.
func deliverPages(ctx context.Context, dir string, c, first, last int, each func(page int, img image.Image) error) error {
	names, err := filepath.Glob(chunkRoot(dir, c) + "-*.pgm")
	if err != nil {
		return fmt.Errorf("answersheet: %w", err)
	}
	slices.SortFunc(names, func(a, b string) int { return pageNumber(a) - pageNumber(b) })
	if len(names) != last-first+1 || pageNumber(names[0]) != first {
		return fmt.Errorf("%w: pages %d to %d rendered as %d files", ErrUnreadablePDF, first, last, len(names))
	}
	for i, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		data, err := os.ReadFile(name) //nolint:gosec // G304: a page pdftoppm wrote into our own temporary folder
		if err != nil {
			return fmt.Errorf("answersheet: %w", err)
		}
		if err := os.Remove(name); err != nil {
			return fmt.Errorf("answersheet: %w", err)
		}
		img, err := decodePGM(data)
		if err != nil {
			return fmt.Errorf("%w: page %d: %v", ErrUnreadablePDF, first+i, err)
		}
		if err := each(first+i, img); err != nil {
			return err
		}
	}
	return nil
}

var pageFile = regexp.MustCompile(`-(\d+)\.pgm$`)

func pageNumber(name string) int {
	m := pageFile.FindStringSubmatch(name)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// decodePGM reads the binary greyscale PGM pdftoppm writes: "P5", width,
// height and maximum value 255 separated by whitespace, one whitespace
// character, then a byte per pixel, row by row. The image shares data.
func decodePGM(data []byte) (*image.Gray, error) {
	rest, ok := bytes.CutPrefix(data, []byte("P5"))
	if !ok {
		return nil, errors.New("not a binary PGM")
	}
	var header [3]int // width, height, maximum value
	for i := range header {
		rest = bytes.TrimLeft(rest, " \t\r\n")
		end := bytes.IndexAny(rest, " \t\r\n")
		if end < 0 {
			return nil, errors.New("PGM header cut short")
		}
		n, err := strconv.Atoi(string(rest[:end]))
		if err != nil || n <= 0 || n > MaxPixels {
			return nil, fmt.Errorf("PGM header field %q", rest[:end])
		}
		header[i], rest = n, rest[end+1:]
	}
	w, h := header[0], header[1]
	switch {
	case header[2] != 255:
		return nil, fmt.Errorf("PGM of %d grey levels, want 256", header[2]+1)
	case w*h > MaxPixels:
		return nil, fmt.Errorf("%d×%d pixels, at most %d", w, h, MaxPixels)
	case len(rest) != w*h:
		return nil, fmt.Errorf("PGM of %d×%d pixels with %d bytes", w, h, len(rest))
	}
	return &image.Gray{Pix: rest, Stride: w, Rect: image.Rect(0, 0, w, h)}, nil
}
