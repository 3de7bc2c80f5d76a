// Package formfield reads the hidden fields of the sign-in, consent and
// account pages, for the clients that fill them in tests and benchmarks.
package formfield

import "regexp"

var hidden = regexp.MustCompile(`name="([^"]+)" value="([^"]*)"`)

// Value is the value of the first field called name in an HTML body, or "".
func Value(body, name string) string {
	for _, m := range hidden.FindAllStringSubmatch(body, -1) {
		if m[1] == name {
			return m[2]
		}
	}
	return ""
}
