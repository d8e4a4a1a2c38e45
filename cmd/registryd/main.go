// Command registryd is the flowgen connector registry: it takes uploads
// from CI, certifies and signs them, stores them in S3-compatible storage
// (or a local directory) with metadata in PostgreSQL (or an embedded
// file), and serves certified connectors to platform teams, including
// through the Go module proxy protocol. Run "registryd help".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/flowgen-dev/flowgen/internal/buildinfo"
	"github.com/flowgen-dev/flowgen/registry"
)

const usage = `registryd is the flowgen connector registry.

Usage:
  registryd serve [flags]                 run the registry
  registryd token create --name N --scope S [--scope S] [--expires D] [--policy FILE]
  registryd token revoke TOKEN_ID
  registryd token list
  registryd gc [--dry-run] [--grace D]    remove blobs no version refers to
  registryd version                       print the version of registryd and of Go

token and gc work on a running registryd through its admin API: the one
serving --data-dir, found through the endpoint file it writes there
(registryd.api.json, readable only by its user), or any with --registry
URL --token ADMIN_TOKEN. With no registryd running they open the stores
directly.

Storage flags (serve and token; every flag also reads the environment
variable in brackets):
` + storageFlagsHelp + `
Run 'registryd serve -h' for the server's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, buildinfo.Line("registryd"))
		return 0
	case "serve":
		err = serve(ctx, args[1:], stderr)
	case "token":
		err = token(ctx, args[1:], stdout, stderr)
	case "gc":
		err = gc(ctx, args[1:], stdout, stderr)
	case registry.WorkerCommand:
		// Internal: serve starts it for each certification.
		return registry.WorkerMain(ctx, os.Stdin, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "registryd: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	fmt.Fprintf(stderr, "registryd: %v\n", err)
	return 1
}

// errUsage is a usage mistake already reported by the flag package.
var errUsage = errors.New("usage")

// parse parses flags that may come before or after positional arguments;
// fs.Args() then holds the positional ones.
func parse(fs *flag.FlagSet, args []string) error {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return errUsage
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return fs.Parse(append([]string{"--"}, positional...))
}

// envOr is the environment variable's value, or def.
func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}
