package answersheet

import "math"

// homography maps page millimetres to photo pixels: a perspective transform
// fixed by the four corner marks, which covers rotation, scale, skew and a
// camera held at an angle.
type homography [9]float64

func (h homography) apply(p Point) (x, y float64) {
	w := h[6]*p.X + h[7]*p.Y + h[8]
	return (h[0]*p.X + h[1]*p.Y + h[2]) / w, (h[3]*p.X + h[4]*p.Y + h[5]) / w
}

// solveHomography finds the transform taking each from[i] to to[i], false
// when the points are degenerate (three on a line).
func solveHomography(from, to [4]Point) (homography, bool) {
	// Eight equations in h0…h7 with h8 = 1, as an augmented matrix.
	var a [8][9]float64
	for i := range 4 {
		X, Y, x, y := from[i].X, from[i].Y, to[i].X, to[i].Y
		a[2*i] = [9]float64{X, Y, 1, 0, 0, 0, -x * X, -x * Y, x}
		a[2*i+1] = [9]float64{0, 0, 0, X, Y, 1, -y * X, -y * Y, y}
	}
	for c := range 8 {
		p := c
		for r := c + 1; r < 8; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		if math.Abs(a[p][c]) < 1e-9 {
			return homography{}, false
		}
		a[c], a[p] = a[p], a[c]
		for r := range 8 {
			if r == c {
				continue
			}
			f := a[r][c] / a[c][c]
			for k := c; k < 9; k++ {
				a[r][k] -= f * a[c][k]
			}
		}
	}
	var h homography
	for i := range 8 {
		h[i] = a[i][8] / a[i][i]
	}
	h[8] = 1
	return h, true
}
