// Command assessd is the assessment platform: the API server, the grading
// workers, the database migrations, operator commands and a one-process
// development environment. See `assessd help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage: assessd <command> [flags]

commands:
  dev        run everything in one process with private dependencies and demo data
  serve      run the API server
  worker     run the grading worker of one AI region (--region eu|global)
  migrate    apply database migrations
  admin      operator commands: org create|update, user create, apikey create|revoke, ...
             ('assessd admin' lists them)

Every flag also reads the environment variable of the same name
(--database-url and DATABASE_URL). Run 'assessd <command> -h' for flags.
`

// errUsage marks a command line that could not be understood.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		// Errors may quote a connection URL: never with its password.
		fmt.Fprintln(os.Stderr, "assessd:", redact(err.Error()))
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stderr)
	case "worker":
		return runWorker(ctx, args[1:], stderr)
	case "migrate":
		return migrateCmd(ctx, args[1:], stdout, stderr)
	case "dev":
		return dev(ctx, args[1:], stdout, stderr)
	case "admin":
		return admin(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprintf(stderr, "unknown command %q\n\n%s", args[0], usage)
	return errUsage
}
