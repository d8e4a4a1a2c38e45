package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/internal/buildinfo"
)

// Exit codes, the same for every command:
//
//	0  success; validation found no errors
//	1  the command ran and found problems (diagnostics with errors)
//	2  usage error, unreadable input or I/O failure
const (
	exitOK       = 0
	exitProblems = 1
	exitUsage    = 2
)

// env is what a command gets: its arguments and the process's streams.
type env struct {
	ctx context.Context
	// getenv reads the process environment; main passes os.Getenv, and no
	// command reads the environment any other way.
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// command is one flowgen subcommand.
type command struct {
	name    string
	summary string
	usage   string
	run     func(e *env, args []string) int
}

func commands() []command {
	return append([]command{
		{"validate", "check ConnectorSpec and Flow files, printing diagnostics like a compiler", validateUsage, runValidate},
		{"show", "validate, then describe connectors and flows", showUsage, runShow},
		{"init", "scaffold a new connector package", initUsage, runInit},
		{"gen", "generate typed Go code from ConnectorSpecs (go generate)", genUsage, runGen},
		{"run", "run one job of a generated flow and print its result", runUsage, runRun},
		{"worker", "run workers for generated flows until interrupted", workerUsage, runWorker},
		{"serve", "own the store: run workers and a local job API the other commands use", serveUsage, runServe},
		{"keygen", "generate an ECDSA P-256 signing key pair", keygenUsage, runKeygen},
		{"sign", "sign files (cosign verify-blob compatible)", signUsage, runSign},
		{"verify", "verify files against their signatures", verifyUsage, runVerify},
		{"package", "pack a connector into its module zip artifact", packageUsage, runPackage},
		{"certify", "run the certification checks on a connector package", certifyUsage, runCertify},
		{"publish", "package a connector, upload it to a registry and follow its certification", publishUsage, runPublish},
		{"pull", "download a certified connector, verify its evidence and place the module", pullUsage, runPull},
		{"search", "find certified connectors in a registry", searchUsage, runSearch},
		{"idemkey", "compute a canonical idempotency key from key fields", idemkeyUsage, runIdemkey},
		{"canonical", "print a spec or flow in its canonical JSON form", canonicalUsage, runCanonical},
		{"schema", "print the JSON Schema of the ConnectorSpec or Flow format", schemaUsage, runSchema},
		{"inspect", "show a job in words: states, attempts, times, errors and what it waits for", inspectUsage, runInspect},
		{"migrate", "manage the PostgreSQL job store schema", migrateUsage, runMigrate},
		{"store", "sweep a job store of what retention lets go, or compact a bbolt file", storeUsage, runStore},
	}, controlCommands()...)
}

// Run executes flowgen with args (without the program name) and the
// environment getenv reads, and returns the process exit code. It never
// calls os.Exit, so tests run it in-process.
func Run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{ctx: ctx, getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		printHelp(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) == 0 {
			printHelp(stdout)
			return exitOK
		}
		for _, c := range commands() {
			if c.name == rest[0] {
				// The command's own -h: its usage and every flag.
				c.run(&env{ctx: ctx, getenv: getenv, stdin: stdin, stdout: stdout, stderr: stdout}, []string{"-h"})
				return exitOK
			}
		}
		fmt.Fprintf(stderr, "flowgen help: unknown command %q%s\n\n", rest[0], suggestCommand(rest[0]))
		printHelp(stderr)
		return exitUsage
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, buildinfo.Line("flowgen"))
		return exitOK
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(e, rest)
		}
	}
	fmt.Fprintf(stderr, "flowgen: unknown command %q%s\n\n", name, suggestCommand(name))
	printHelp(stderr)
	return exitUsage
}

func printHelp(w io.Writer) {
	var b strings.Builder
	b.WriteString("flowgen turns ConnectorSpec and Flow IR files into typed, exactly-once Go workflow code.\n\n")
	b.WriteString("Usage: flowgen <command> [flags] [arguments]\n\nCommands:\n")
	cs := commands()
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	for _, c := range cs {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(&b, "  %-10s %s\n", "version", "print the version of flowgen and of Go")
	b.WriteString("\nRun 'flowgen help <command>' for a command's flags.\n")
	b.WriteString("\nExit status: 0 success, 1 problems found (diagnostics with errors), 2 usage or I/O error.\n")
	io.WriteString(w, b.String())
}

// parseFlags parses flags that may appear before, between or after the
// positional arguments, and returns the positional arguments. A lone "--"
// ends flag parsing.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if rest[0] == "--" && (len(args) == 0 || args[len(args)-len(rest)] == "--") {
			return append(positional, rest[1:]...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// newFlagSet returns a flag set that prints its usage text on -h.
func newFlagSet(e *env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprint(e.stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// flagExit maps a flag parsing error to an exit code: -h is not a failure.
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

// suggestCommand proposes the command a misspelt one may have meant.
func suggestCommand(name string) string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	if best, ok := flowtype.Closest(name, names); ok {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}
