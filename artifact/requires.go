package artifact

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/internal/flowgenmod"
	"github.com/flowgen-dev/flowgen/internal/golist"
)

// ErrCannotTravel: the connector imports packages of its enclosing module,
// or modules through replace directives, that a consumer of the artifact
// could not resolve.
var ErrCannotTravel = errors.New("the artifact cannot carry what the connector imports")

// depPackage is what go list -deps says of a package that matters here.
type depPackage struct {
	ImportPath string
	Dir        string
	Standard   bool
	Imports    []string
	Module     *struct {
		Path, Version string
		Main          bool
		Replace       *struct{ Path, Version, Dir string }
	}
	Error *struct{ Err string }
}

// requirements decides what the synthesized go.mod of a connector in dir,
// inside the module at root (path modPath), requires: every module that
// provides a package its packages (tests included) import, directly or
// not, at the version the enclosing module's build uses, and nothing
// else. flowgen itself is required at the version of the checkout or
// module the connector builds against (flowgenmod.Used). It refuses, with
// ErrCannotTravel, imports of other packages of the enclosing module and
// modules reached through replace directives.
func requirements(dir, modPath string) ([]*modfile.Require, error) {
	ctx := context.Background()
	pkgs, err := golist.Packages[depPackage](ctx, dir, nil, "-deps", "-test", ".")
	if err != nil {
		return nil, fmt.Errorf("the connector's packages do not load: %w", err)
	}
	own := func(p depPackage) bool { return p.Dir == dir }
	direct := map[string]bool{}
	for _, p := range pkgs {
		if p.Module != nil && p.Module.Main && own(p) {
			for _, imp := range p.Imports {
				direct[imp] = true
			}
		}
	}
	versions := map[string]string{}
	directMods := map[string]bool{}
	var stranded, replaced []string
	for _, p := range pkgs {
		if p.Standard || p.Module == nil {
			continue
		}
		if p.Error != nil {
			return nil, fmt.Errorf("package %s: %s", p.ImportPath, p.Error.Err)
		}
		m := p.Module
		switch {
		case m.Main && own(p):
			continue
		case m.Path == flowgenmod.Path && (m.Main || m.Replace != nil):
			if versions[m.Path] == "" {
				_, v, err := flowgenmod.Used(ctx, dir)
				if err != nil {
					return nil, err
				}
				versions[m.Path] = v
			}
		case m.Main:
			stranded = append(stranded, strandedWhy(p, dir))
			continue
		case m.Replace != nil:
			if !slices.Contains(replaced, m.Path) {
				replaced = append(replaced, m.Path)
			}
			continue
		default:
			versions[m.Path] = m.Version
		}
		if direct[p.ImportPath] {
			directMods[m.Path] = true
		}
	}
	var problems []string
	if len(stranded) > 0 {
		problems = append(problems, fmt.Sprintf("it imports packages of its enclosing module %s, which a consumer of the artifact could not resolve:\n\t%s\n"+
			"\tfix: move that code into the connector package, or make the connector directory a module of its own (go mod init) that requires %s at a published version",
			modPath, strings.Join(slices.Compact(slices.Sorted(slices.Values(stranded))), "\n\t"), modPath))
	}
	if len(replaced) > 0 {
		problems = append(problems, fmt.Sprintf("the enclosing go.mod replaces %s, and a consumer of the artifact would not see the replace directive\n\tfix: publish those modules at a version and require it, or vendor the code into the connector directory",
			strings.Join(replaced, ", ")))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrCannotTravel, strings.Join(problems, "\n"))
	}
	var reqs []*modfile.Require
	for _, path := range slices.Sorted(func(yield func(string) bool) {
		for p := range versions {
			if !yield(p) {
				return
			}
		}
	}) {
		r := &modfile.Require{Indirect: !directMods[path]}
		r.Mod.Path, r.Mod.Version = path, versions[path]
		reqs = append(reqs, r)
	}
	return reqs, nil
}

// strandedWhy names a package of the enclosing module the connector
// imports, with what it is when that explains the fix.
func strandedWhy(p depPackage, dir string) string {
	what := p.ImportPath
	if within(dir, p.Dir) {
		what += " (below the connector directory, its import path would change with the module: make the connector directory a module root instead)"
	} else if _, err := os.Stat(filepath.Join(p.Dir, connectorspec.TypesFile)); err == nil {
		what += " (the Go types generated from schema files the spec refers to: keep those schema files in the connector directory)"
	}
	return what
}
