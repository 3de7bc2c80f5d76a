// Package race tells a test whether the race detector is on, for work
// whose cost it multiplies (decision 0210).
package race
