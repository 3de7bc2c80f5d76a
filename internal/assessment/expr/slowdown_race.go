//go:build race

package expr

// slowdown multiplies Timeout in a binary built with -race, which runs an
// evaluation 5-10 times slower: the bound is for the expression's work,
// and the race detector's cost is not the expression's.
const slowdown = 10
