package answersheet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
)

// MaxPageMemory bounds what reading one page image may hold (decision
// 0174): a 48-megapixel phone photo (about 140 MiB with its file) passes;
// a page past it is refused as too large, since decoding takes what its
// header declares however small the file (a 300 KB PNG of 7,000×7,000
// 16-bit pixels decodes to 373 MB).
const MaxPageMemory = 160 << 20

// SplitMemory is what splitting one file holds: the file, and a
// rasterized page as pdftoppm's output, its image and its PNG file.
const SplitMemory = MaxUploadBytes + 3*pdfLongSide*pdfLongSide

// PageMemory is the memory reading a page image holds at most, from its
// header: the file, what Go's decoder allocates for its pixels, and the
// grey copy the reader makes of all but grey images.
func PageMemory(data []byte) (int64, error) {
	c, err := checkImage(data)
	return c.memory, err
}

// pageMemory is PageMemory of an image whose header checkImage read.
func pageMemory(data []byte, cfg image.Config) (int64, error) {
	pixels := int64(cfg.Width) * int64(cfg.Height)
	decoded := int64(decoderState)
	if bytes.HasPrefix(data, []byte("\xff\xd8")) {
		jpg, err := jpegMemory(data)
		if err != nil {
			return 0, err
		}
		decoded += jpg
	} else {
		perPixel := pngBytesPerPixel(cfg.ColorModel)
		image := pixels * perPixel
		// An interlaced PNG is decoded a pass at a time into images of
		// its own, then copied into the whole.
		if len(data) > 28 && data[28] == 1 {
			image *= 2
		}
		decoded += image + 2*(int64(cfg.Width)*perPixel+1) // and two rows
	}
	if cfg.ColorModel != color.GrayModel {
		decoded += pixels // toGray's copy
	}
	return int64(len(data)) + decoded, nil
}

// decoderState is what a decoder allocates whatever the image's size:
// flate's window and tables, Huffman tables and read buffers.
const decoderState = 128 << 10

// pngBytesPerPixel is the size of a pixel of the image image/png decodes
// to for a header's colour model.
func pngBytesPerPixel(model color.Model) int64 {
	switch model {
	case color.GrayModel:
		return 1
	case color.Gray16Model:
		return 2
	case color.RGBAModel, color.NRGBAModel:
		return 4
	case color.RGBA64Model, color.NRGBA64Model:
		return 8
	}
	return 1 // paletted
}

var errNoFrame = errors.New("no frame header")

// jpegMemory is what image/jpeg allocates to decode the JPEG data, from
// its frame header: each component's samples padded to whole blocks, a
// 32-bit coefficient per sample more for a progressive JPEG, and the RGBA
// or CMYK image that RGB and four-component JPEGs are converted into.
// Whether a three-component JPEG is RGB may be said by an Adobe segment
// anywhere before its end, so every segment is walked, as the decoder
// does.
func jpegMemory(data []byte) (int64, error) {
	var jfif, adobeRGB bool
	var frame []byte
	progressive := false
	for i := 2; i+4 <= len(data); {
		marker := data[i+1]
		switch {
		case data[i] != 0xff, marker == 0xff:
			i++ // fill bytes, and stray bytes image/jpeg skips as libjpeg does
			continue
		case marker == 0x00, marker == 0x01, marker >= 0xd0 && marker <= 0xd7: // no length
			i += 2
			continue
		case marker == 0xd9: // end of image
			i = len(data)
			continue
		}
		n := int(binary.BigEndian.Uint16(data[i+2:]))
		if n < 2 || i+2+n > len(data) {
			break // truncated: decoding will fail, and the frame is known
		}
		seg := data[i+4 : i+2+n]
		switch {
		case marker == 0xe0 && bytes.HasPrefix(seg, []byte("JFIF\x00")):
			jfif = true
		case marker == 0xee && bytes.HasPrefix(seg, []byte("Adobe")) && len(seg) >= 12:
			adobeRGB = seg[11] == 0 // transform "unknown", in practice RGB
		case (marker == 0xc0 || marker == 0xc1 || marker == 0xc2) && frame == nil:
			frame, progressive = seg, marker == 0xc2
		}
		i += 2 + n
		if marker == 0xda { // entropy-coded data runs to the next marker
			for i+1 < len(data) && (data[i] != 0xff || data[i+1] == 0x00 || data[i+1] >= 0xd0 && data[i+1] <= 0xd7) {
				i++
			}
		}
	}
	if frame == nil {
		return 0, fmt.Errorf("%w: %w", ErrCorruptImage, errNoFrame)
	}
	return frameMemory(frame, progressive, jfif, adobeRGB)
}

// frameMemory reads a start-of-frame segment (jpegMemory).
func frameMemory(seg []byte, progressive, jfif, adobeRGB bool) (int64, error) {
	if len(seg) < 6 || len(seg) < 6+3*int(seg[5]) {
		return 0, fmt.Errorf("%w: short frame header", ErrCorruptImage)
	}
	height, width, n := int64(binary.BigEndian.Uint16(seg[1:])), int64(binary.BigEndian.Uint16(seg[3:])), int(seg[5])
	comps := seg[6 : 6+3*n]
	var hMax, vMax int64 = 1, 1
	for c := range n {
		hMax, vMax = max(hMax, int64(comps[3*c+1]>>4)), max(vMax, int64(comps[3*c+1]&15))
	}
	mcusX, mcusY := (width+8*hMax-1)/(8*hMax), (height+8*vMax-1)/(8*vMax)
	var samples int64
	for c := range n {
		h, v := int64(comps[3*c+1]>>4), int64(comps[3*c+1]&15)
		samples += 8 * h * mcusX * 8 * v * mcusY
	}
	total := samples
	if progressive {
		total += 4 * samples
	}
	rgb := !jfif && (adobeRGB || n == 3 && comps[0] == 'R' && comps[3] == 'G' && comps[6] == 'B')
	if n == 4 || n == 3 && rgb {
		total += 4 * width * height
	}
	return total, nil
}
