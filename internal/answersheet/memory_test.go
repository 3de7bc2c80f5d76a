package answersheet_test

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"runtime"
	"testing"

	"github.com/assessd/assessd/internal/answersheet"
)

// PageMemory is held to what image/png and image/jpeg allocate decoding
// each kind of image, measured: it may not fall short, and it may not
// overstate by more than a tenth and the decoders' fixed state. Kinds Go cannot encode (4:4:4 and
// progressive sampling, RGB and CMYK JPEGs, interlaced PNG) come from
// libjpeg's cjpeg and ImageMagick, in testdata.
func TestPageMemoryCoversDecoding(t *testing.T) {
	const w, h = 640, 480
	fill := func(img interface{ Set(x, y int, c color.Color) }) {
		for y := range h {
			for x := range w {
				img.Set(x, y, color.RGBA64{uint16(x * 97), uint16(y * 131), uint16(x * y), 0xffff})
			}
		}
	}
	encode := func(img image.Image, jpg bool) []byte {
		var buf bytes.Buffer
		var err error
		if jpg {
			err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 80})
		} else {
			err = png.Encode(&buf, img)
		}
		if err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	r := image.Rect(0, 0, w, h)
	gray, gray16, rgba, nrgba, rgba64, nrgba64 := image.NewGray(r), image.NewGray16(r), image.NewRGBA(r), image.NewNRGBA(r), image.NewRGBA64(r), image.NewNRGBA64(r)
	paletted := image.NewPaletted(r, color.Palette{color.Black, color.White, color.Gray{Y: 128}})
	for _, img := range []interface{ Set(x, y int, c color.Color) }{gray, gray16, rgba, nrgba, rgba64, nrgba64, paletted} {
		fill(img)
	}
	nrgba.Pix[3] = 0x80 // translucent: encoded as RGBA, decoded as NRGBA
	nrgba64.Pix[6] = 0x80
	cases := map[string][]byte{
		"grey png": encode(gray, false), "16-bit grey png": encode(gray16, false), "rgb png": encode(rgba, false),
		"rgba png": encode(nrgba, false), "16-bit rgb png": encode(rgba64, false), "16-bit rgba png": encode(nrgba64, false),
		"paletted png": encode(paletted, false), "grey jpeg": encode(gray, true), "4:2:0 jpeg": encode(rgba, true),
	}
	for _, name := range []string{"ycc444.jpg", "progressive420.jpg", "rgb.jpg", "cmyk.jpg", "interlaced.png"} {
		data, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		cases[name] = data
	}
	for name, data := range cases {
		memory, err := answersheet.PageMemory(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var img image.Image
		allocated := uint64(1 << 62)
		for range 3 { // the least of three: other goroutines allocate too
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			img, err = answersheet.DecodeImage(data)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			allocated = min(allocated, after.TotalAlloc-before.TotalAlloc)
		}
		b := img.Bounds()
		grey := uint64(b.Dx() * b.Dy()) // the reader's grey copy
		if _, ok := img.(*image.Gray); ok {
			grey = 0
		}
		want := allocated + grey + uint64(len(data))
		t.Logf("%-20s %T: PageMemory %d, decoding allocated %d, with file and grey copy %d", name, img, memory, allocated, want)
		most := uint64(1.1*float64(want)) + 128<<10
		if uint64(memory) < want || uint64(memory) > most {
			t.Errorf("%s: PageMemory %d, want %d to %d", name, memory, want, most)
		}
	}
}

// An image that would take more than MaxPageMemory to decode is refused
// from its header, however small its file: the upload check refuses it
// before a worker tries. 16-bit RGB decodes to 8 bytes a pixel, so 20
// megapixels pass the pixel bound and not the memory one.
func TestPagesPastTheMemoryBoundAreRefused(t *testing.T) {
	header := pngHeader(5000, 4000, 16, 2)
	if _, err := answersheet.PageMemory(header); !errors.Is(err, answersheet.ErrTooLarge) {
		t.Errorf("PageMemory: %v, want ErrTooLarge", err)
	}
	if _, err := answersheet.DecodeImage(header); !errors.Is(err, answersheet.ErrTooLarge) {
		t.Errorf("DecodeImage: %v, want ErrTooLarge", err)
	}
	if _, err := answersheet.CheckUpload(t.Context(), header); !errors.Is(err, answersheet.ErrTooLarge) {
		t.Errorf("CheckUpload: %v, want ErrTooLarge", err)
	}
	// The same size in 8-bit grey is well within it.
	if memory, err := answersheet.PageMemory(pngHeader(5000, 4000, 8, 0)); err != nil || memory > answersheet.MaxPageMemory/4 {
		t.Errorf("8-bit grey: %d, %v", memory, err)
	}
}

// Every JPEG or PNG header image/jpeg and image/png read has a memory
// figure: reading it for the budget refuses nothing the decoders take.
func FuzzPageMemory(f *testing.F) {
	for _, name := range []string{"ycc444.jpg", "progressive420.jpg", "rgb.jpg", "cmyk.jpg", "interlaced.png"} {
		data, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data[:min(len(data), 2048)])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, jpegErr := jpeg.DecodeConfig(bytes.NewReader(data))
		memory, err := answersheet.PageMemory(data)
		switch {
		case err == nil && memory <= 0:
			t.Fatalf("PageMemory %d", memory)
		case err != nil && !errors.Is(err, answersheet.ErrTooLarge) && !errors.Is(err, answersheet.ErrUnsupportedFormat) && !errors.Is(err, answersheet.ErrCorruptImage):
			t.Fatalf("PageMemory: %v", err)
		case errors.Is(err, answersheet.ErrCorruptImage) && jpegErr == nil && cfg.Width > 0 && cfg.Height > 0 && bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
			t.Fatalf("image/jpeg reads the header, PageMemory refuses it: %v", err)
		}
	})
}
