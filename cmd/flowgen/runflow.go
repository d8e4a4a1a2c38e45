package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/flowgen-dev/flowgen/flowir"
	"github.com/flowgen-dev/flowgen/gen"
	"github.com/flowgen-dev/flowgen/runtime/localrun"
)

const runUsage = `Usage: flowgen run [flags] FLOW.yaml

Runs one job of a generated flow and prints its status (state, result by
node, errors) as JSON. The flow's Go package must be generated and up to
date (go generate ./...); run builds a small program around its constructor,
with each connector package's default implementation, using "go build" in
the flow's module (nothing is written to your tree), and runs the job's workers in that process
on the job store (by default the embedded file flowgen.db, created if
missing). Subflows in the same package are registered too.

Capabilities are backed by the store (KV, dedupe), --blobs (blobs),
FLOWGEN_SECRET_<HANDLE> environment variables (secrets; the handle upper-
cased with non-alphanumerics as _), FLOWGEN_DATABASE_URL (db.read and
db.write) and the network, within each connector's egress allowlist.

Exit status: 0 the job succeeded, 1 it failed, was killed or is still
running at --timeout (it stays in the store: inspect, signal or resume it),
2 usage, I/O or build error.

Flags:
`

func runRun(e *env, args []string) int {
	fs := newFlagSet(e, "run", runUsage)
	storePath := fs.String("store", "", storeFlagHelp)
	input := fs.String("input", "", "JSON input of the job: a file, or - for standard input (required)")
	timeout := fs.Duration("timeout", 0, "stop waiting after this long (default 5m); the job stays in the store")
	workers := fs.Int("workers", 4, "workers in the run process")
	blobs := fs.String("blobs", "flowgen-blobs", "directory backing blob capabilities")
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
	prog, cleanup, code := buildFlowProgram(e, "run", "Main", []*flowir.Graph{g})
	if code != exitOK {
		return code
	}
	defer cleanup()
	store := resolveStore(*storePath)
	progArgs := []string{"--store", absUnlessURL(store), "--input", absUnlessDash(*input),
		"--workers", fmt.Sprint(*workers), "--blobs", absUnlessDash(*blobs)}
	if *timeout > 0 {
		progArgs = append(progArgs, "--timeout", timeout.String())
	}
	cmd := exec.CommandContext(e.ctx, prog, progArgs...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
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
func buildFlowProgram(e *env, cmdName, entry string, graphs []*flowir.Graph) (prog string, cleanup func(), code int) {
	fail := func(format string, args ...any) (string, func(), int) {
		fmt.Fprintf(e.stderr, "flowgen %s: "+format+"\n", append([]any{cmdName}, args...)...)
		return "", nil, exitUsage
	}
	var buildDir string
	var imports, ctors []string
	seen := map[string]bool{}
	for i, g := range graphs {
		files, diags := gen.Flow(g)
		if diags.HasErrors() {
			diags.WriteText(e.stdout)
			return "", nil, exitProblems
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
		importPath, err := gen.ImportPath(dir)
		if err != nil {
			return fail("%v", err)
		}
		alias := fmt.Sprintf("flow%d", i)
		imports = append(imports, fmt.Sprintf("\t%s %q\n", alias, importPath))
		add := func(c *flowir.Graph) {
			if !seen[c.Flow.ID] {
				seen[c.Flow.ID] = true
				ctor := strings.ReplaceAll(gen.FlowConstructor(c), "(Default", "("+alias+".Default")
				ctors = append(ctors, fmt.Sprintf("\t\tfunc() (*runtime.Flow, error) { return %s.%s },\n", alias, ctor))
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
	}
	var b bytes.Buffer
	b.WriteString("package main\n\nimport (\n")
	for _, imp := range imports {
		b.WriteString(imp)
	}
	fmt.Fprintf(&b, "\t\"github.com/flowgen-dev/flowgen/runtime\"\n\t\"github.com/flowgen-dev/flowgen/runtime/localrun\"\n)\n\nfunc main() {\n\tlocalrun.%s(\n", entry)
	for _, c := range ctors {
		b.WriteString(c)
	}
	b.WriteString("\t)\n}\n")

	tmp, err := os.MkdirTemp("", "flowgen-"+cmdName+"-")
	if err != nil {
		return fail("%v", err)
	}
	cleanup = func() { os.RemoveAll(tmp) }
	mainPath := filepath.Join(tmp, "main.go")
	overlay := filepath.Join(tmp, "overlay.json")
	js, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(buildDir, "flowgenrun", "main.go"): mainPath}})
	if err := os.WriteFile(mainPath, b.Bytes(), 0o644); err != nil {
		cleanup()
		return fail("%v", err)
	}
	if err := os.WriteFile(overlay, js, 0o644); err != nil {
		cleanup()
		return fail("%v", err)
	}
	prog = filepath.Join(tmp, "flowgen-"+cmdName)
	build := exec.CommandContext(e.ctx, "go", "build", "-overlay", overlay, "-o", prog, "./flowgenrun")
	build.Dir = buildDir
	if out, err := build.CombinedOutput(); err != nil {
		cleanup()
		return fail("building the flow program: %v\n%s", err, out)
	}
	return prog, cleanup, exitOK
}

const workerUsage = `Usage: flowgen worker [flags] FLOW.yaml...

Runs workers for the given generated flows (and their subflows) until
interrupted (SIGINT or SIGTERM), then lets in-flight steps finish. Point
every worker, on as many machines as you like, at one PostgreSQL store with
--store postgres://...; the embedded file store serves one process. Jobs
are started by flowgen run or by your own program; capabilities are backed
as for flowgen run. Every flow must be generated and up to date, and in one
Go module.

Flags:
`

func runWorker(e *env, args []string) int {
	fs := newFlagSet(e, "worker", workerUsage)
	storePath := fs.String("store", "", storeFlagHelp)
	workers := fs.Int("workers", 4, "workers in this process")
	blobs := fs.String("blobs", "flowgen-blobs", "directory backing blob capabilities")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(rest) == 0 {
		fmt.Fprint(e.stderr, "flowgen worker: name at least one FLOW file\n\n")
		fs.Usage()
		return exitUsage
	}
	var graphs []*flowir.Graph
	for _, f := range rest {
		g, diags := flowir.NewLoader().LoadFlow(f)
		if diags.HasErrors() || g == nil {
			diags.WriteText(e.stdout)
			fmt.Fprintf(e.stderr, "flowgen worker: %s has errors\n", f)
			return exitProblems
		}
		graphs = append(graphs, g)
	}
	prog, cleanup, code := buildFlowProgram(e, "worker", "WorkerMain", graphs)
	if code != exitOK {
		return code
	}
	defer cleanup()
	store := resolveStore(*storePath)
	cmd := exec.Command(prog, "--store", absUnlessURL(store), "--workers", fmt.Sprint(*workers), "--blobs", absUnlessDash(*blobs))
	cmd.Stdout, cmd.Stderr = e.stdout, e.stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(e.stderr, "flowgen worker: %v\n", err)
		return exitUsage
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-e.ctx.Done():
		cmd.Process.Signal(os.Interrupt) // graceful: in-flight steps finish
		err = <-done
	}
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode()
	}
	return exitOK
}
