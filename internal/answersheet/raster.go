package answersheet

import (
	"image"
	"image/draw"
	"math"
)

// toGray returns img as 8-bit luminance, without copying when it already
// is. JPEG photos keep their Y plane, which is luminance.
func toGray(img image.Image) *image.Gray {
	b := img.Bounds()
	switch m := img.(type) {
	case *image.Gray:
		return m
	case *image.YCbCr:
		g := image.NewGray(image.Rect(0, 0, b.Dx(), b.Dy()))
		for y := 0; y < b.Dy(); y++ {
			row := m.YOffset(b.Min.X, b.Min.Y+y)
			copy(g.Pix[y*g.Stride:y*g.Stride+b.Dx()], m.Y[row:row+b.Dx()])
		}
		return g
	case *image.NRGBA, *image.RGBA:
		var pix []uint8
		var stride int
		if n, ok := m.(*image.NRGBA); ok {
			pix, stride = n.Pix, n.Stride
		} else {
			r := m.(*image.RGBA)
			pix, stride = r.Pix, r.Stride
		}
		g := image.NewGray(image.Rect(0, 0, b.Dx(), b.Dy()))
		for y := 0; y < b.Dy(); y++ {
			src := pix[y*stride:]
			dst := g.Pix[y*g.Stride:]
			for x := 0; x < b.Dx(); x++ {
				r, gg, bb := uint32(src[4*x]), uint32(src[4*x+1]), uint32(src[4*x+2])
				// color.GrayModel's weights, in 16-bit fixed point.
				dst[x] = uint8((19595*r + 38470*gg + 7471*bb + 1<<15) >> 16)
			}
		}
		return g
	default:
		g := image.NewGray(image.Rect(0, 0, b.Dx(), b.Dy()))
		draw.Draw(g, g.Bounds(), img, b.Min, draw.Src)
		return g
	}
}

// shrink averages k×k blocks, so mark detection works on about a megapixel
// whatever the camera.
func shrink(g *image.Gray, k int) *image.Gray {
	if k <= 1 {
		return g
	}
	w, h := g.Rect.Dx()/k, g.Rect.Dy()/k
	out := image.NewGray(image.Rect(0, 0, w, h))
	sums := make([]uint32, w)
	for y := 0; y < h; y++ {
		clear(sums)
		for dy := 0; dy < k; dy++ {
			row := g.Pix[(y*k+dy)*g.Stride:]
			for x := 0; x < w; x++ {
				for _, v := range row[x*k : x*k+k] {
					sums[x] += uint32(v)
				}
			}
		}
		for x := range sums {
			out.Pix[y*out.Stride+x] = uint8(sums[x] / uint32(k*k))
		}
	}
	return out
}

// at samples g bilinearly at a continuous position, pixel centres at +0.5;
// outside the image is white paper.
func at(g *image.Gray, x, y float64) float64 {
	x, y = x-0.5, y-0.5
	x0, y0 := int(math.Floor(x)), int(math.Floor(y))
	fx, fy := x-float64(x0), y-float64(y0)
	p := func(x, y int) float64 {
		if x < 0 || y < 0 || x >= g.Rect.Dx() || y >= g.Rect.Dy() {
			return 255
		}
		return float64(g.Pix[y*g.Stride+x])
	}
	top := p(x0, y0)*(1-fx) + p(x0+1, y0)*fx
	bottom := p(x0, y0+1)*(1-fx) + p(x0+1, y0+1)*fx
	return top*(1-fy) + bottom*fy
}

// warp renders the page area r at pxPerMM from the photo, through h.
func warp(g *image.Gray, h homography, r Rect, pxPerMM float64) *image.Gray {
	w, ht := int(r.W*pxPerMM+0.5), int(r.H*pxPerMM+0.5)
	out := image.NewGray(image.Rect(0, 0, w, ht))
	for y := 0; y < ht; y++ {
		for x := 0; x < w; x++ {
			p := Point{r.X + (float64(x)+0.5)/pxPerMM, r.Y + (float64(y)+0.5)/pxPerMM}
			out.Pix[y*out.Stride+x] = uint8(sample(g, h, p) + 0.5)
		}
	}
	return out
}
