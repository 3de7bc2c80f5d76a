package answersheet

import (
	"bytes"
	"strings"
	"testing"
)

func TestDecodePGM(t *testing.T) {
	// Pixel bytes that are whitespace (9, 10, 13, 32) must stay pixels.
	pixels := []byte{0, 9, 10, 13, 32, 255}
	for _, header := range []string{"P5\n3 2\n255\n", "P5 3 2 255 ", "P5\r\n3\t2\r\n255\n"} {
		img, err := decodePGM(append([]byte(header), pixels...))
		if err != nil {
			t.Fatalf("%q: %v", header, err)
		}
		if img.Bounds().Dx() != 3 || img.Bounds().Dy() != 2 || !bytes.Equal(img.Pix, pixels) || img.GrayAt(1, 1).Y != 32 {
			t.Errorf("%q: decoded %v %v", header, img.Bounds(), img.Pix)
		}
	}
	for name, data := range map[string]string{
		"no magic":        "P6\n3 2\n255\n" + string(pixels),
		"16-bit":          "P5\n3 2\n65535\n" + string(pixels),
		"pixels missing":  "P5\n3 2\n255\n\x00\x01",
		"pixels too many": "P5\n3 2\n255\n" + string(pixels) + "x",
		"header cut":      "P5\n3 2",
		"not a number":    "P5\nx 2\n255\n" + string(pixels),
		"zero width":      "P5\n0 2\n255\n",
		"huge":            "P5\n100000 100000\n255\n",
		"comment":         "P5\n# pdftoppm writes none\n3 2\n255\n" + string(pixels),
	} {
		if img, err := decodePGM([]byte(data)); err == nil {
			t.Errorf("%s: decoded %v, want an error", name, img.Bounds())
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q spans lines", name, err)
		}
	}
}
