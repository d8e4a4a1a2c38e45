package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/flowir"
	"github.com/flowgen-dev/flowgen/gen"
)

const genUsage = `Usage: flowgen gen [--check] [PATH...]

Generates typed Go code for every ConnectorSpec and Flow under the PATHs
(default ".", searched recursively like flowgen validate): node_gen.go,
types_gen.go and, with fixtures, fixtures_gen_test.go next to each spec; a
types_gen.go in each directory of schema files specs share; and
<flow>_gen.go next to each flow, whose NewX constructor wires the flow's
nodes with typed connections. Connectors placed by flowgen pull are
certified evidence and left as they are; flows that use them run them
confined. A connector package declares one go:generate line,

	//go:generate go tool flowgen gen

so "go generate ./..." regenerates everything with the flowgen version pinned
in go.mod. Generated files are deterministic; only files whose content
changes are rewritten, each through a temporary file renamed into place. If
any spec has errors, they are printed as diagnostics and nothing is written.

--check writes nothing: it lists the files that are out of date and exits 1
if there are any (for CI drift checks).

Exit status: 0 done (or up to date), 1 errors or out-of-date files, 2 usage or I/O error.

Flags:
`

func runGen(e *env, args []string) int {
	fs := newFlagSet(e, "gen", genUsage)
	check := fs.Bool("check", false, "write nothing; list out-of-date files and exit 1 if any")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(paths) == 0 {
		paths = []string{"."}
	}
	specFiles, flowFiles, diags, err := collect(paths)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen gen: %v\n", err)
		return exitUsage
	}
	var files []gen.Generated
	for _, f := range specFiles {
		s, ds := connectorspec.Load(f)
		diags.Append(ds)
		if s == nil || ds.HasErrors() {
			continue
		}
		if pulled, _ := connectorspec.PulledOf(s); pulled != nil {
			continue // certified evidence, generated when it was published
		}
		out, ds := gen.Connector(s)
		diags.Append(ds)
		files = append(files, out...)
	}
	for _, f := range flowFiles {
		g, ds := flowir.NewLoader().LoadFlow(f)
		diags.Append(ds)
		if g == nil || ds.HasErrors() {
			continue
		}
		out, ds := gen.Flow(g)
		diags.Append(ds)
		files = append(files, out...)
	}
	files = uniqueFiles(files)
	diags.Sort()
	if len(diags) > 0 {
		if err := diags.WriteText(e.stdout); err != nil {
			fmt.Fprintf(e.stderr, "flowgen gen: %v\n", err)
			return exitUsage
		}
	}
	if diags.HasErrors() {
		fmt.Fprintf(e.stderr, "flowgen gen: %s; nothing written\n", countErrors(diags))
		return exitProblems
	}
	if len(specFiles)+len(flowFiles) == 0 {
		fmt.Fprintf(e.stderr, "flowgen gen: no ConnectorSpec or Flow found under %v\n", paths)
		return exitUsage
	}
	if *check {
		changed, err := gen.Changed(files)
		if err != nil {
			fmt.Fprintf(e.stderr, "flowgen gen: %v\n", err)
			return exitUsage
		}
		for _, p := range changed {
			fmt.Fprintf(e.stdout, "out of date: %s\n", filepath.ToSlash(p))
		}
		if len(changed) > 0 {
			fmt.Fprintf(e.stderr, "flowgen gen --check: %d of %d generated files out of date; run go generate ./...\n", len(changed), len(files))
			return exitProblems
		}
		fmt.Fprintf(e.stderr, "flowgen gen --check: %d generated files up to date\n", len(files))
		return exitOK
	}
	written, err := gen.Write(files)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen gen: %v\n", err)
		return exitUsage
	}
	for _, p := range written {
		verb := "wrote"
		if _, err := os.Stat(p); os.IsNotExist(err) {
			verb = "removed"
		}
		fmt.Fprintf(e.stdout, "%s %s\n", verb, filepath.ToSlash(p))
	}
	fmt.Fprintf(e.stderr, "flowgen gen: %d connectors, %d flows, %d files written, %d unchanged\n", len(specFiles), len(flowFiles), len(written), len(files)-len(written))
	return exitOK
}

func countErrors(l diag.List) string {
	n := 0
	for _, d := range l {
		if d.Severity == diag.Error {
			n++
		}
	}
	if n == 1 {
		return "1 error"
	}
	return fmt.Sprintf("%d errors", n)
}

// uniqueFiles drops repeats of a shared package's file (every connector
// that uses it generates the same bytes) and shows paths relative to the
// working directory.
func uniqueFiles(files []gen.Generated) []gen.Generated {
	wd, _ := os.Getwd()
	seen := map[string]bool{}
	var out []gen.Generated
	for _, f := range files {
		if filepath.IsAbs(f.Path) && wd != "" {
			if rel, err := filepath.Rel(wd, f.Path); err == nil && !strings.HasPrefix(rel, "..") {
				f.Path = rel
			}
		}
		key := filepath.Clean(f.Path)
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, f)
	}
	return out
}
