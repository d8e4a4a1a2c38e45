package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/flowir"
	"github.com/flowgen-dev/flowgen/gen"
	"github.com/flowgen-dev/flowgen/internal/strictyaml"
)

const validateUsage = `Usage: flowgen validate [--format text|json] PATH...

Checks ConnectorSpec and Flow files. A PATH may be a file or a directory;
directories are searched recursively and every .yaml, .yml and .json file
whose header is apiVersion: flowgen.dev/v1 with kind ConnectorSpec or Flow is
checked (other files are ignored). All problems are reported in one run,
sorted by position, as file:line:col: severity CODE: message, with a fix
below. --format json prints one JSON object per diagnostic per line instead.
Every code is documented in docs/diagnostics.md.

Exit status: 0 no errors (warnings allowed), 1 errors found, 2 usage or I/O error.

Flags:
`

// workspace is the set of files a validate or show run covers.
type workspace struct {
	loader *flowir.Loader
	specs  []*connectorspec.Spec
	flows  []*flowir.Graph
	diags  diag.List
	files  int
}

// collect finds flowgen files under paths, reporting files that are given
// explicitly but carry no flowgen header.
func collect(paths []string) (specs, flows []string, diags diag.List, err error) {
	seen := map[string]bool{}
	add := func(path string, explicit bool) error {
		if seen[path] {
			return nil
		}
		seen[path] = true
		data, err := strictyaml.ReadFile(path)
		if err != nil {
			return err
		}
		switch flowir.FileKind(data) {
		case connectorspec.Kind:
			specs = append(specs, path)
		case flowir.Kind:
			flows = append(flows, path)
		default:
			if explicit {
				diags.Add(diag.Pos{File: path, Line: 1, Col: 1}, diag.FMT007,
					"start the file with apiVersion: flowgen.dev/v1 and kind: ConnectorSpec or kind: Flow",
					"not a flowgen file: no apiVersion/kind header that flowgen reads")
			}
		}
		return nil
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, nil, nil, err
		}
		if !info.IsDir() {
			if err := add(p, true); err != nil {
				return nil, nil, nil, err
			}
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != p && (d.Name() == "testdata" || d.Name()[0] == '.') {
				return filepath.SkipDir
			}
			if d.IsDir() || !flowir.IsSourceFile(path) {
				return nil
			}
			return add(path, false)
		})
		if err != nil {
			return nil, nil, nil, err
		}
	}
	sort.Strings(specs)
	sort.Strings(flows)
	return specs, flows, diags, nil
}

// load validates every flowgen file under paths.
func load(paths []string) (*workspace, error) {
	specFiles, flowFiles, diags, err := collect(paths)
	if err != nil {
		return nil, err
	}
	w := &workspace{loader: flowir.NewLoader(), diags: diags, files: len(specFiles) + len(flowFiles)}
	for _, f := range specFiles {
		s, ds := w.loader.LoadSpec(f)
		w.diags.Append(ds)
		if s != nil {
			w.specs = append(w.specs, s)
			if !ds.HasErrors() {
				w.diags.Append(gen.Check(s))
			}
		}
	}
	for _, f := range flowFiles {
		g, ds := w.loader.LoadFlow(f)
		w.diags.Append(ds)
		if g != nil {
			w.flows = append(w.flows, g)
		}
	}
	w.diags.Append(w.loader.CheckCompensators())
	w.diags.Sort()
	return w, nil
}

func runValidate(e *env, args []string) int {
	fs := newFlagSet(e, "validate", validateUsage)
	format := fs.String("format", "text", "output format: text or json (JSON lines)")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if *format != "text" && *format != "json" {
		fmt.Fprintf(e.stderr, "flowgen validate: unknown --format %q (want text or json)\n", *format)
		return exitUsage
	}
	if len(paths) == 0 {
		fmt.Fprint(e.stderr, "flowgen validate: no PATH given\n\n")
		fs.Usage()
		return exitUsage
	}
	w, err := load(paths)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen validate: %v\n", err)
		return exitUsage
	}
	if *format == "json" {
		err = w.diags.WriteJSONLines(e.stdout)
	} else {
		err = w.diags.WriteText(e.stdout)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen validate: %v\n", err)
		return exitUsage
	}
	if *format == "text" {
		fmt.Fprintln(e.stderr, summary(w))
	}
	if w.diags.HasErrors() {
		return exitProblems
	}
	return exitOK
}

func summary(w *workspace) string {
	errs, warns := 0, 0
	for _, d := range w.diags {
		if d.Severity == diag.Error {
			errs++
		} else {
			warns++
		}
	}
	return fmt.Sprintf("%s checked (%s, %s): %s, %s",
		plural(w.files, "file"), plural(len(w.specs), "connector"), plural(len(w.flows), "flow"), plural(errs, "error"), plural(warns, "warning"))
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
