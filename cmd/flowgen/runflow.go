package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/flowgen-dev/flowgen/flowir"
	"github.com/flowgen-dev/flowgen/gen"
	"github.com/flowgen-dev/flowgen/internal/modpath"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/serve/jobapi"
	"github.com/flowgen-dev/flowgen/serve/localrun"
)

const runUsage = `Usage: flowgen run [flags] --input FILE FLOW.yaml

Runs one job of a generated flow and prints its status (state, result by
node, errors) as JSON. The input is checked first: a JSON syntax error is
reported with its line and column, and every value the flow's entry nodes'
input schemas refuse with its JSON path; no job is created for it.

When flowgen serve owns the store, the job goes to it. Otherwise run
builds a small program around the flow's generated constructor (the
flow's Go package must be generated and up to date: go generate ./...),
with each connector package's default implementation, using "go build" in
the flow's module (nothing is written to your tree), and runs the job's
workers in that process on the store (by default the embedded file
flowgen.db, created if missing). Subflows in the same package are
registered too.

A job that reaches a checkpoint returns at once: run prints the exact
flowgen signal command that decides it.

With --key, the job is started once under that key: a second run with
the same key (a retried script, a second machine on the same store)
starts no job and follows the one the key started, whatever its state,
finished included. Another flow cannot reuse the key.

Capabilities are backed by the store (KV, dedupe), --blobs (blobs),
FLOWGEN_SECRET_<HANDLE> environment variables (secrets; the handle upper-
cased with non-alphanumerics as _: stripe/secret-key is
FLOWGEN_SECRET_STRIPE_SECRET_KEY), FLOWGEN_DATABASE_URL (db.read and
db.write) and the network, within each connector's egress allowlist.
FLOWGEN_CONNECT_TO=HOST=URL[,HOST=URL...] sends the requests meant for an
allowed HOST to a stand-in (api.stripe.com=http://127.0.0.1:18610), as
curl --connect-to does; egress is still judged on HOST.

Exit status: 0 the job succeeded, 1 it failed, was killed or is still
running at --timeout (it stays in the store: inspect or resume it), 2
usage, input, I/O or build error, 3 it waits at a checkpoint for a
decision.

Flags:
`

func runRun(e *env, args []string) int {
	fs := newFlagSet(e, "run", runUsage)
	pf := newProgramFlags(fs)
	input := fs.String("input", "", "JSON input of the job: a file, or - for standard input (required)")
	timeout := fs.Duration("timeout", 5*time.Minute, "stop waiting after this long; the job stays in the store")
	key := fs.String("key", "", localrun.KeyFlagHelp)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(rest) != 1 || *input == "" {
		fmt.Fprint(e.stderr, "flowgen run: want one FLOW file and --input\n\n")
		fs.Usage()
		return exitUsage
	}
	g, diags := flowir.NewLoader().LoadFlow(rest[0])
	if diags.HasErrors() || g == nil {
		diags.WriteText(e.stdout)
		fmt.Fprintf(e.stderr, "flowgen run: %s has errors\n", rest[0])
		return exitProblems
	}
	var data []byte
	inputName := *input
	if *input == "-" {
		data, err = io.ReadAll(e.stdin)
		inputName = ""
	} else {
		data, err = os.ReadFile(*input)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen run: input: %v\n", err)
		return exitUsage
	}
	if err := g.CheckInput(inputName, data); err != nil {
		fmt.Fprintf(e.stderr, "flowgen run: %v\n", err)
		return exitUsage
	}
	store := resolveStore(e, *pf.store)
	if !localrun.IsDatabaseURL(store) {
		if abs, err := filepath.Abs(store); err == nil {
			if c, err := jobapi.Discover(e.ctx, abs); err == nil {
				return runOnServer(e, c, g, data, *key, *timeout, store)
			}
		}
	}
	prog, code := buildFlowProgram(e, "run", "Main", []*flowir.Graph{g})
	if code != exitOK {
		return code
	}
	defer prog.cleanup()
	cmd := exec.CommandContext(e.ctx, prog.path, append(pf.args(e, prog), "--input", "-", "--timeout", timeout.String(), "--key", *key)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(data), e.stdout, e.stderr
	err = cmd.Run()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode()
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen run: %v\n", err)
		return exitUsage
	}
	return exitOK
}

// runOnServer starts the job on the flowgen serve that owns the store and
// follows it as a local run would.
func runOnServer(e *env, c *jobapi.Client, g *flowir.Graph, input []byte, key string, timeout time.Duration, store string) int {
	job, created, err := c.StartOnce(e.ctx, g.Flow.ID, key, input)
	if errors.Is(err, runtime.ErrUnknownFlow) {
		fmt.Fprintf(e.stderr, "flowgen run: the flowgen serve that owns %s (pid %d) does not run flow %s; restart it with %s\n",
			store, c.Endpoint.PID, g.Flow.ID, g.Flow.File)
		return exitUsage
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen run: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(e.stderr, "%s (flowgen serve, pid %d)\n", localrun.StartedLine(job, g.Flow.ID, key, created), c.Endpoint.PID)
	out, err := jobapi.Await(e.ctx, c, job, timeout)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen run: %v\n", err)
		return exitProblems
	}
	return localrun.Report(e.stdout, e.stderr, job, out, timeout, localrun.StoreFlag(store))
}

func absUnlessURL(s string) string {
	if localrun.IsDatabaseURL(s) {
		return s
	}
	return absUnlessDash(s)
}

func absUnlessDash(s string) string {
	if s == "-" {
		return s
	}
	if abs, err := filepath.Abs(s); err == nil {
		return abs
	}
	return s
}

// buildFlowProgram checks that each flow's generated code is up to date,
// writes a main package that hands the flows' constructors (and those of
// their subflows in the same package) to localrun.<entry>, and builds it
// with an overlay, so nothing is written to the user's tree. The program
// is removed by cleanup.
func buildFlowProgram(e *env, cmdName, entry string, graphs []*flowir.Graph) (prog flowProgram, code int) {
	fail := func(format string, args ...any) (flowProgram, int) {
		fmt.Fprintf(e.stderr, "flowgen %s: "+format+"\n", append([]any{cmdName}, args...)...)
		return flowProgram{}, exitUsage
	}
	var buildDir string
	var pkgs []gen.ProgramPackage
	seen := map[string]bool{}
	for _, g := range graphs {
		files, diags := gen.Flow(g)
		if diags.HasErrors() {
			diags.WriteText(e.stdout)
			return flowProgram{}, exitProblems
		}
		if stale, err := gen.Changed(files); err != nil || len(stale) > 0 {
			return fail("%s is missing or out of date; run go generate ./... (or flowgen gen %s) first",
				filepath.ToSlash(files[0].Path), filepath.ToSlash(filepath.Dir(g.Flow.File)))
		}
		dir, err := filepath.Abs(filepath.Dir(g.Flow.File))
		if err != nil {
			return fail("%v", err)
		}
		if buildDir == "" {
			buildDir = dir
		}
		importPath, err := modpath.ImportPath(dir)
		if err != nil {
			return fail("%v", err)
		}
		pkg := gen.ProgramPackage{ImportPath: importPath}
		add := func(c *flowir.Graph) {
			if !seen[c.Flow.ID] {
				seen[c.Flow.ID] = true
				pkg.Flows = append(pkg.Flows, c)
			}
		}
		add(g)
		for _, n := range g.Nodes {
			if n.Child == nil {
				continue
			}
			childDir, _ := filepath.Abs(filepath.Dir(n.Child.Flow.File))
			if childDir != dir {
				return fail("subflow %s is in another package (%s); list its flow file too", n.Child.Flow.ID, childDir)
			}
			add(n.Child)
		}
		pkgs = append(pkgs, pkg)
	}
	src, err := gen.FlowProgram(entry, pkgs)
	if err != nil {
		return fail("%v", err)
	}

	tmp, err := os.MkdirTemp("", "flowgen-"+cmdName+"-")
	if err != nil {
		return fail("%v", err)
	}
	cleanup := func() { os.RemoveAll(tmp) }
	mainPath := filepath.Join(tmp, "main.go")
	overlay := filepath.Join(tmp, "overlay.json")
	js, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(buildDir, "flowgenrun", "main.go"): mainPath}})
	if err := os.WriteFile(mainPath, src, 0o644); err != nil {
		cleanup()
		return fail("%v", err)
	}
	if err := os.WriteFile(overlay, js, 0o644); err != nil {
		cleanup()
		return fail("%v", err)
	}
	moduleDir, err := modpath.Root(buildDir)
	if err != nil {
		cleanup()
		return fail("%v", err)
	}
	prog = flowProgram{path: filepath.Join(tmp, "flowgen-"+cmdName), moduleDir: moduleDir, cleanup: cleanup}
	build := exec.CommandContext(e.ctx, "go", "build", "-overlay", overlay, "-o", prog.path, "./flowgenrun")
	build.Dir = buildDir
	if out, err := build.CombinedOutput(); err != nil {
		cleanup()
		return fail("building the flow program: %v\n%s", err, out)
	}
	return prog, exitOK
}

// flowProgram is a built flow program.
type flowProgram struct {
	// path is the program's executable.
	path string
	// moduleDir is the root of the flows' Go module, where the paths of
	// their confined connectors' modules start.
	moduleDir string
	// cleanup removes the program.
	cleanup func()
}

const workerUsage = `Usage: flowgen worker [flags] FLOW.yaml...

Runs workers for the given generated flows (and their subflows) until
interrupted (SIGINT or SIGTERM), then lets in-flight steps finish. Point
every worker, on as many machines as you like, at one PostgreSQL store with
--store postgres://...; the embedded file store has one owner, so on it
prefer flowgen serve, which runs the same workers and lets every other
command in. Jobs are started by flowgen run or by your own program;
capabilities are backed as for flowgen run. Every flow must be generated
and up to date, and in one Go module. --metrics-addr serves the workers'
Prometheus metrics at /metrics there (docs/observability.md); flowgen
serve serves them on its job API's address.

Flags:
`

const serveUsage = `Usage: flowgen serve [flags] FLOW.yaml...

Runs workers for the given generated flows (and their subflows) on the
store and serves a local job API on --addr (127.0.0.1, any free port by
default) until interrupted (SIGINT or SIGTERM). On an embedded store it
writes the API's address and a token to an endpoint file next to the
store (STORE.api.json, readable only by you); run, inspect, jobs, pause,
resume, kill and signal find it there and go through the server, so no
command fails because the server holds the file. Inputs are checked
against each flow's schemas before a job is created. Capabilities are
backed as for flowgen run.

The same address serves a web console: jobs (filters, activation tree,
history, approve/reject, pause, resume, kill), dead letters (requeue,
fail) and flows (graph, job counts). Open the console address serve
prints (http://ADDR/login?token=...) to sign a browser in; sensitive
fields (pii, financial, health, credential, confidential data classes)
are masked. Prometheus metrics are at /metrics.

Flags:
`

// programFlags are the flags run, worker and serve share and hand to the
// flow program (whose own defaults are the same: localrun.Default*).
type programFlags struct {
	store, blobs *string
	workers      *int
	retention    *time.Duration
}

func newProgramFlags(fs *flag.FlagSet) programFlags {
	return programFlags{
		store:     fs.String("store", "", storeFlagHelp),
		workers:   fs.Int("workers", localrun.DefaultWorkers, "workers in the flow program's process"),
		blobs:     fs.String("blobs", localrun.DefaultBlobs, "directory backing blob capabilities"),
		retention: fs.Duration("retention", localrun.DefaultRetention, localrun.RetentionFlagHelp),
	}
}

func (p programFlags) args(e *env, prog flowProgram) []string {
	return []string{"--store", absUnlessURL(resolveStore(e, *p.store)), "--workers", fmt.Sprint(*p.workers), "--blobs", absUnlessDash(*p.blobs), "--retention", p.retention.String(), "--module-dir", prog.moduleDir}
}

// loadFlows loads every flow file, printing diagnostics on failure.
func loadFlows(e *env, name string, files []string) ([]*flowir.Graph, int) {
	var graphs []*flowir.Graph
	for _, f := range files {
		g, diags := flowir.NewLoader().LoadFlow(f)
		if diags.HasErrors() || g == nil {
			diags.WriteText(e.stdout)
			fmt.Fprintf(e.stderr, "flowgen %s: %s has errors\n", name, f)
			return nil, exitProblems
		}
		graphs = append(graphs, g)
	}
	return graphs, exitOK
}

// runUntilInterrupted runs the flow program until it exits or the command
// is interrupted, then stops it gracefully (in-flight steps finish).
func runUntilInterrupted(e *env, name, prog string, args []string) int {
	cmd := exec.Command(prog, args...)
	cmd.Stdout, cmd.Stderr = e.stdout, e.stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(e.stderr, "flowgen %s: %v\n", name, err)
		return exitUsage
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-e.ctx.Done():
		cmd.Process.Signal(os.Interrupt)
		err = <-done
	}
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode()
	}
	return exitOK
}

func runWorker(e *env, args []string) int {
	return runFlowProgram(e, "worker", workerUsage, "WorkerMain", args, func(fs *flag.FlagSet) func([]string) []string {
		addr := fs.String("metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (none when empty; port 0: any free port)")
		return func([]string) []string {
			if *addr == "" {
				return nil
			}
			return []string{"--metrics-addr", *addr}
		}
	})
}

func runServe(e *env, args []string) int {
	var addr *string
	return runFlowProgram(e, "serve", serveUsage, "ServeMain", args, func(fs *flag.FlagSet) func([]string) []string {
		addr = fs.String("addr", "127.0.0.1:0", "address of the job API and web console (port 0: any free port)")
		return func(files []string) []string {
			extra := []string{"--addr", *addr}
			for _, f := range files {
				extra = append(extra, "--flow", absUnlessDash(f))
			}
			return extra
		}
	})
}

// runFlowProgram is worker and serve: it parses the flags (more, when
// set, adds its own and returns what they add to the program's
// arguments), loads the flow files, builds the flow program around
// localrun.<entry> and runs it until interrupted.
func runFlowProgram(e *env, name, usage, entry string, args []string, more func(*flag.FlagSet) func(files []string) []string) int {
	fs := newFlagSet(e, name, usage)
	pf := newProgramFlags(fs)
	var extra func([]string) []string
	if more != nil {
		extra = more(fs)
	}
	rest, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(rest) == 0 {
		fmt.Fprintf(e.stderr, "flowgen %s: name at least one FLOW file\n\n", name)
		fs.Usage()
		return exitUsage
	}
	graphs, code := loadFlows(e, name, rest)
	if code != exitOK {
		return code
	}
	prog, code := buildFlowProgram(e, name, entry, graphs)
	if code != exitOK {
		return code
	}
	defer prog.cleanup()
	progArgs := pf.args(e, prog)
	if extra != nil {
		progArgs = append(progArgs, extra(rest)...)
	}
	return runUntilInterrupted(e, name, prog.path, progArgs)
}
