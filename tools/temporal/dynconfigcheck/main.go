// Command dynconfigcheck validates Temporal dynamic configuration files
// with the server's own loader, the one the compose stack's server runs:
// a decoding error, an unknown key or a value the key refuses fails it.
//
// Usage: dynconfigcheck file.yaml...
package main

import (
	"errors"
	"fmt"
	"os"

	"go.temporal.io/server/common/dynamicconfig"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: dynconfigcheck file.yaml...")
		os.Exit(2)
	}
	failed := false
	for _, file := range os.Args[1:] {
		if err := check(file); err != nil {
			fmt.Fprintf(os.Stderr, "dynconfigcheck: %s: %v\n", file, err)
			failed = true
			continue
		}
		fmt.Printf("%s: OK\n", file)
	}
	if failed {
		os.Exit(1)
	}
}

func check(file string) error {
	contents, err := os.ReadFile(file) //nolint:gosec // G304: the operator names the files
	if err != nil {
		return err
	}
	result := dynamicconfig.ValidateFile(contents)
	return errors.Join(append(result.Errors, result.Warnings...)...)
}
