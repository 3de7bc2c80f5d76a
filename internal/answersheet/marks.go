package answersheet

import (
	"image"
	"math"
	"slices"
)

// detectLongSide is the long side, in pixels, at which corner marks are
// looked for: marks are about 35 px there, and labelling a megapixel is
// quick.
const detectLongSide = 1000

// blob is a connected dark region of the shrunken photo.
type blob struct {
	area                   int
	minX, minY, maxX, maxY int
	sumX, sumY             int
	onBorder               bool
}

func (b blob) center() Point {
	return Point{float64(b.sumX)/float64(b.area) + 0.5, float64(b.sumY)/float64(b.area) + 0.5}
}

// findMarks finds the four corner marks and returns their centres in photo
// pixels, in the order of the photo's corners: top-left, top-right,
// bottom-right, bottom-left. Which page corner each is depends on how the
// photo is turned; the reader tries the four turns against the QR code.
func findMarks(g *image.Gray) ([4]Point, bool) {
	long := max(g.Rect.Dx(), g.Rect.Dy())
	k := max(1, (long+detectLongSide-1)/detectLongSide)
	small := shrink(g, k)
	w, h := small.Rect.Dx(), small.Rect.Dy()
	if w < 50 || h < 50 {
		return [4]Point{}, false
	}
	sl := float64(max(w, h))
	var cands []blob
	for _, b := range blobs(darkMask(small), w, h) {
		bw, bh := b.maxX-b.minX+1, b.maxY-b.minY+1
		aspect := float64(bw) / float64(bh)
		fill := float64(b.area) / float64(bw*bh)
		if !b.onBorder && math.Sqrt(float64(b.area)) >= sl*0.012 && float64(max(bw, bh)) <= sl*0.1 &&
			aspect > 0.6 && aspect < 1/0.6 && fill >= 0.6 {
			cands = append(cands, b)
		}
	}
	if len(cands) < 4 {
		return [4]Point{}, false
	}
	// The marks are the page's outermost shapes: each is the most extreme
	// candidate along its diagonal.
	proj := [4]func(p Point) float64{
		func(p Point) float64 { return -p.X - p.Y },
		func(p Point) float64 { return p.X - p.Y },
		func(p Point) float64 { return p.X + p.Y },
		func(p Point) float64 { return p.Y - p.X },
	}
	var chosen [4]blob
	for i, f := range proj {
		chosen[i] = slices.MaxFunc(cands, func(a, b blob) int {
			if d := f(a.center()) - f(b.center()); d != 0 {
				return int(math.Copysign(1, d))
			}
			return 0
		})
	}
	if !plausibleMarks(chosen) {
		return [4]Point{}, false
	}
	var out [4]Point
	for i, b := range chosen {
		c := b.center()
		out[i] = Point{c.X * float64(k), c.Y * float64(k)}
	}
	return out, true
}

// plausibleMarks checks that the four blobs look like one sheet's marks:
// distinct, alike in size, forming a convex quadrilateral whose sides are
// about as many mark widths long as on the printed page.
func plausibleMarks(m [4]blob) bool {
	areas := []float64{}
	for _, b := range m {
		areas = append(areas, float64(b.area))
	}
	slices.Sort(areas)
	if areas[3] > 3*areas[0] {
		return false
	}
	side := math.Sqrt(areas[1]+areas[2]) / math.Sqrt2
	var p [4]Point
	for i, b := range m {
		p[i] = b.center()
	}
	for i := range 4 {
		a, b, c := p[i], p[(i+1)%4], p[(i+2)%4]
		if (b.X-a.X)*(c.Y-b.Y)-(b.Y-a.Y)*(c.X-b.X) <= 0 {
			return false // not convex and clockwise (y grows downwards)
		}
		d := math.Hypot(b.X-a.X, b.Y-a.Y) / side
		// The page's mark-to-mark distances are 186 and 273 mm, 23 and 34
		// mark widths; allow for perspective and blur.
		if d < 15 || d > 45 {
			return false
		}
	}
	return true
}

// darkMask marks pixels clearly darker than their surroundings: below 75%
// of the mean of a window an eighth of the image wide, which follows uneven
// lighting across a photo yet keeps solid marks solid.
func darkMask(g *image.Gray) []bool {
	w, h := g.Rect.Dx(), g.Rect.Dy()
	sum := make([]uint32, (w+1)*(h+1))
	for y := range h {
		var row uint32
		for x := range w {
			row += uint32(g.Pix[y*g.Stride+x])
			sum[(y+1)*(w+1)+x+1] = sum[y*(w+1)+x+1] + row
		}
	}
	r := max(w, h) / 16
	dark := make([]bool, w*h)
	for y := range h {
		y0, y1 := max(0, y-r), min(h, y+r+1)
		for x := range w {
			x0, x1 := max(0, x-r), min(w, x+r+1)
			s := sum[y1*(w+1)+x1] - sum[y0*(w+1)+x1] - sum[y1*(w+1)+x0] + sum[y0*(w+1)+x0]
			n := uint32((y1 - y0) * (x1 - x0))
			dark[y*w+x] = uint32(g.Pix[y*g.Stride+x])*n*4 < s*3
		}
	}
	return dark
}

// blobs labels the 4-connected regions of the mask.
func blobs(dark []bool, w, h int) []blob {
	seen := make([]bool, len(dark))
	var out []blob
	var stack []int
	for start, d := range dark {
		if !d || seen[start] {
			continue
		}
		b := blob{minX: w, minY: h, maxX: -1, maxY: -1}
		seen[start] = true
		stack = append(stack[:0], start)
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			x, y := i%w, i/w
			b.area++
			b.sumX += x
			b.sumY += y
			b.minX, b.maxX = min(b.minX, x), max(b.maxX, x)
			b.minY, b.maxY = min(b.minY, y), max(b.maxY, y)
			if x == 0 || y == 0 || x == w-1 || y == h-1 {
				b.onBorder = true
			}
			for _, n := range [4]int{i - 1, i + 1, i - w, i + w} {
				if n < 0 || n >= len(dark) || seen[n] || !dark[n] ||
					(n == i-1 && x == 0) || (n == i+1 && x == w-1) {
					continue
				}
				seen[n] = true
				stack = append(stack, n)
			}
		}
		out = append(out, b)
	}
	return out
}
