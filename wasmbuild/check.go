package wasmbuild

import (
	"context"
	"fmt"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/flowgen-dev/flowgen/internal/golist"
)

// Error is a connector that cannot become a confined module; Problems
// names each reason, one per line.
type Error struct{ Problems []string }

func (e *Error) Error() string {
	return "the connector does not build as a confined module:\n  " + strings.Join(e.Problems, "\n  ")
}

// refused are the standard packages a confined module may not import,
// and why: each exists only to do what a module cannot (a process, a
// signal, code loaded at run time), so an import of one is a connector
// that expects what it will never get. Packages that merely could reach
// further (net, syscall, os) build: inside the module they reach nothing
// but the module (no sockets, no files, no environment), and widely used
// libraries import them for a constant or a type.
var refused = map[string]string{
	"os/exec":   "a confined connector starts no processes",
	"os/signal": "a confined connector receives no signals",
	"plugin":    "a confined connector loads no code at run time",
}

// listed is what Check reads of go list.
type listed struct {
	ImportPath        string
	Dir               string
	Standard          bool
	GoFiles           []string
	Imports           []string
	IgnoredGoFiles    []string
	IgnoredOtherFiles []string
	SFiles            []string
	Error             *struct{ Err string }
	DepsErrors        []*struct{ Err string }
}

// Check lists the connector package in dir and everything it imports as a
// wasip1 build sees them, and returns the package's import path, or an
// *Error naming every package that imports what a confined module may
// not, or does not build for wasip1, and why.
func Check(ctx context.Context, dir string) (string, error) {
	importPath, _, err := check(ctx, dir)
	return importPath, err
}

func check(ctx context.Context, dir string) (string, []listed, error) {
	pkgs, err := golist.Packages[listed](ctx, dir, overrides, "-e", "-deps", ".")
	if err != nil {
		return "", nil, err
	}
	if len(pkgs) == 0 {
		return "", nil, fmt.Errorf("go list found no package in %s", dir)
	}
	root := pkgs[len(pkgs)-1] // -deps lists dependencies first
	var problems []string
	for _, p := range pkgs {
		if p.Standard {
			continue
		}
		for _, im := range p.Imports {
			if why, ok := refused[im]; ok {
				problems = append(problems, fmt.Sprintf("%s: %s imports %s: %s", position(dir, p, im), p.ImportPath, im, why))
			}
		}
		if p.Error != nil {
			problems = append(problems, p.ImportPath+": "+explain(p))
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return "", nil, &Error{Problems: slices.Compact(problems)}
	}
	return root.ImportPath, pkgs, nil
}

// buildError explains a failed build of the packages pkgs: the go
// command's output, with a line for each package whose errors are
// functions without a body while it has assembly for other
// architectures only.
func buildError(output string, pkgs []listed) *Error {
	e := &Error{}
	blocks := strings.Split("\n"+output, "\n# ")
	for _, p := range pkgs {
		var asm []string
		for _, f := range p.IgnoredOtherFiles {
			if strings.HasSuffix(f, ".s") {
				asm = append(asm, f)
			}
		}
		if p.Standard || len(asm) == 0 {
			continue
		}
		for _, b := range blocks {
			header, body, _ := strings.Cut(b, "\n")
			if strings.TrimSpace(header) == p.ImportPath && strings.Contains(body, "missing function body") {
				e.Problems = append(e.Problems, fmt.Sprintf("%s: is written in assembly for other architectures (%s), which WebAssembly cannot run", p.ImportPath, strings.Join(asm, ", ")))
			}
		}
	}
	e.Problems = append(e.Problems, strings.TrimSpace(output))
	return e
}

// position is the file:line:column where p imports im, relative to dir
// when the file is below it, or p's import path when no file says.
func position(dir string, p listed, im string) string {
	for _, name := range p.GoFiles {
		path := filepath.Join(p.Dir, name)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			continue
		}
		for _, spec := range f.Imports {
			if spec.Path.Value != strconv.Quote(im) {
				continue
			}
			pos := fset.Position(spec.Path.Pos())
			if rel, err := filepath.Rel(dir, path); err == nil && !strings.HasPrefix(rel, "..") {
				path = rel
			}
			return fmt.Sprintf("%s:%d:%d", filepath.ToSlash(path), pos.Line, pos.Column)
		}
	}
	return p.ImportPath
}

// explain says why a package does not build for wasip1: its Go files all
// need cgo, it is written in assembly for other architectures, or what
// the go command said.
func explain(p listed) string {
	msg := strings.TrimSpace(p.Error.Err)
	var cgo []string
	for _, f := range p.IgnoredGoFiles {
		if usesCgo(filepath.Join(p.Dir, f)) {
			cgo = append(cgo, f)
		}
	}
	switch {
	case len(cgo) > 0:
		return fmt.Sprintf("needs cgo (%s), and no C code runs in a confined module: %s", strings.Join(cgo, ", "), msg)
	case len(p.SFiles) > 0 || strings.Contains(msg, "missing function body"):
		return "is written in assembly for other architectures, which WebAssembly cannot run: " + msg
	}
	return "does not build for wasip1: " + msg
}

func usesCgo(path string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
	if err != nil {
		return false
	}
	for _, im := range f.Imports {
		if im.Path.Value == `"C"` {
			return true
		}
	}
	return false
}
