//go:build !race

package expr

// slowdown multiplies Timeout; see slowdown_race.go.
const slowdown = 1
