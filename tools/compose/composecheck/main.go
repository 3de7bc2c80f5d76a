// Command composecheck loads a compose file with compose-go, the loader
// behind `docker compose config` (schema validation, interpolation,
// merge keys, dependency consistency), and checks that every bind-mounted
// path exists, so the file is known good without a Docker engine.
//
// Usage: composecheck compose.yaml
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: composecheck compose.yaml")
		os.Exit(2)
	}
	if err := check(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "composecheck:", err)
		os.Exit(1)
	}
}

func check(file string) error {
	opts, err := cli.NewProjectOptions([]string{file}, cli.WithConsistency(true), cli.WithResolvedPaths(true), cli.WithDiscardEnvFile)
	if err != nil {
		return err
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		return err
	}
	for name, s := range project.Services {
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			if _, err := os.Stat(v.Source); err != nil {
				return fmt.Errorf("service %s mounts %s: %w", name, v.Source, err)
			}
		}
		if s.Build != nil {
			if _, err := os.Stat(s.Build.Context); err != nil {
				return fmt.Errorf("service %s builds from %s: %w", name, s.Build.Context, err)
			}
		}
	}
	fmt.Printf("%s: %d services OK\n", file, len(project.Services))
	return nil
}
