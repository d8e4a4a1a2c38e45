// Package connectorvet is the static analysis of connector code. It has
// two entry points over one vocabulary of rules (rules.go):
//
//   - [Reach], which certification runs: SSA and a call graph over every
//     package of the artifact and of its non-standard dependencies, and a
//     walk of every path from the connector's entry points to what its
//     declared effects and determinism forbid (the clock, randomness, the
//     environment and host, the file system, processes, the network outside
//     the capabilities, system calls, unsafe code, reflection, plugins, cgo,
//     assembly, goroutines, package state written from Run, the runtime's
//     internals). Each finding carries its call path. This is what decides.
//   - [Analyzer], for editors and `go vet -vettool=$(which flowgen-vet)`:
//     the same rules applied to the direct calls in one package, without
//     following them. It finds the common mistakes early; a clean vet does
//     not mean a connector certifies.
//
// A finding is accepted, with a reason, by a comment on its line or the
// line above, or on a line of the connector's own code that its call path
// runs through: //flowgen:allow RULE -- reason. Rules that let a connector
// act outside its capabilities (env, fs, write, exec, net, syscall, plugin,
// cgo, bypass, excluded, trust) can never be waived; every waiver, used,
// unused or refused, is evidence in the certification report.
package connectorvet

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
)

// Analyzer reports the rules on one package's direct calls.
var Analyzer = &analysis.Analyzer{
	Name: "connectorvet",
	Doc: "report nondeterminism and capability bypasses in flowgen connector code\n\n" +
		"Only connector packages are checked: those with a connector.yaml beside their files. " +
		"So go vet -vettool=$(which flowgen-vet) ./... checks a module's connectors and nothing else.",
	URL:      "https://github.com/flowgen-dev/flowgen/tree/main/connectorvet",
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      run,
}

func run(pass *analysis.Pass) (any, error) {
	if !isConnector(pass) {
		return nil, nil
	}
	ins := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	skip := map[*token.File]bool{}
	var files []*ast.File
	for _, f := range pass.Files {
		tf := pass.Fset.File(f.Pos())
		if ast.IsGenerated(f) || strings.HasSuffix(tf.Name(), "_test.go") {
			skip[tf] = true
			continue
		}
		files = append(files, f)
	}
	waivers := parseWaivers(pass.Fset, files)
	report := func(pos token.Pos, r Rule, msg string) {
		if skip[pass.Fset.File(pos)] {
			return
		}
		f := &Finding{Rule: r, Pos: pass.Fset.Position(pos)}
		if waive(f, waivers) != nil {
			return
		}
		pass.Report(analysis.Diagnostic{Pos: pos, Category: string(r), Message: fmt.Sprintf("%s: %s; %s", r, msg, r.Fix())})
	}
	astChecks(pass.Fset, files, pass.TypesInfo, report)
	nodes := []ast.Node{(*ast.Ident)(nil), (*ast.GoStmt)(nil), (*ast.CallExpr)(nil)}
	ins.Preorder(nodes, func(n ast.Node) {
		switch n := n.(type) {
		case *ast.GoStmt:
			report(n.Pos(), Goroutine, "a goroutine makes the order of effects and output depend on scheduling")
		case *ast.CallExpr:
			if tv, ok := pass.TypesInfo.Types[n.Fun]; ok && tv.IsType() && isUnsafePointer(tv.Type) {
				report(n.Pos(), Unsafe, "a conversion to unsafe.Pointer escapes the type system")
			}
		case *ast.Ident:
			judge(pass.TypesInfo, n, report)
		}
	})
	return nil, nil
}

// judge reports a use of a classified standard library function, method
// or variable.
func judge(info *types.Info, id *ast.Ident, report func(token.Pos, Rule, string)) {
	obj := info.Uses[id]
	if obj == nil || obj.Pkg() == nil {
		return
	}
	name := obj.Name()
	switch o := obj.(type) {
	case *types.Func:
		if recv := o.Type().(*types.Signature).Recv(); recv != nil {
			n := namedOf(recv.Type())
			if n == nil {
				return
			}
			name = n.Obj().Name() + "." + name
		}
	case *types.Var:
		if o.IsField() || o.Parent() != o.Pkg().Scope() {
			return
		}
	default:
		return
	}
	if r := classify(obj.Pkg().Path(), name); r != "" {
		report(id.Pos(), r, fmt.Sprintf("%s.%s %s", obj.Pkg().Path(), name, describe(r)))
	}
}

// isContextDone reports whether a select case receives from ctx.Done().
func isContextDone(info *types.Info, comm ast.Stmt) bool {
	var x ast.Expr
	switch c := comm.(type) {
	case *ast.ExprStmt:
		x = c.X
	case *ast.AssignStmt:
		if len(c.Rhs) == 1 {
			x = c.Rhs[0]
		}
	}
	recv, ok := x.(*ast.UnaryExpr)
	if !ok || recv.Op != token.ARROW {
		return false
	}
	call, ok := recv.X.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Done" {
		return false
	}
	f, ok := info.Uses[sel.Sel].(*types.Func)
	return ok && f.Pkg() != nil && f.Pkg().Path() == "context"
}

// callee names a call's target as "pkgpath.Func" or "pkgpath.Type.Method",
// and returns the package path.
func callee(info *types.Info, call *ast.CallExpr) (string, string) {
	var id *ast.Ident
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		id = fn
	case *ast.SelectorExpr:
		id = fn.Sel
	default:
		return "", ""
	}
	f, ok := info.Uses[id].(*types.Func)
	if !ok || f.Pkg() == nil {
		return "", ""
	}
	pkg := f.Pkg().Path()
	sig := f.Type().(*types.Signature)
	if recv := sig.Recv(); recv != nil {
		t := recv.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		if named, ok := types.Unalias(t).(*types.Named); ok {
			return pkg + "." + named.Obj().Name() + "." + f.Name(), pkg
		}
		return "", pkg
	}
	return pkg + "." + f.Name(), pkg
}

// orderedOutput reports what a loop body builds whose result depends on
// order: the variables it appends to (appended), and whether it also
// writes to a builder or writer, prints, or appends to anything that is
// not a plain variable (other).
func orderedOutput(info *types.Info, body *ast.BlockStmt) (appended []types.Object, other bool) {
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if id, ok := call.Fun.(*ast.Ident); ok {
			if b, ok := info.Uses[id].(*types.Builtin); ok && b.Name() == "append" && len(call.Args) > 0 {
				if v, ok := call.Args[0].(*ast.Ident); ok && info.Uses[v] != nil {
					appended = append(appended, info.Uses[v])
				} else {
					other = true
				}
			}
			return true
		}
		name, pkg := callee(info, call)
		switch {
		case pkg == "fmt" && (strings.HasPrefix(name, "fmt.Fprint") || strings.HasPrefix(name, "fmt.Print")):
			other = true
		case strings.HasSuffix(name, ".Write") || strings.HasSuffix(name, ".WriteString") || strings.HasSuffix(name, ".WriteByte") ||
			strings.HasSuffix(name, ".WriteRune") || strings.HasSuffix(name, ".Encode"):
			other = true
		}
		return true
	})
	return appended, other
}

// sorters are the functions that put a slice, their first argument, in an
// order of its own.
var sorters = map[string]bool{
	"sort.Strings": true, "sort.Ints": true, "sort.Float64s": true, "sort.Slice": true, "sort.SliceStable": true,
	"slices.Sort": true, "slices.SortFunc": true, "slices.SortStableFunc": true,
}

// sortedAfter reports whether the first use of the slice v in body after
// pos sorts it: then the order it was built in never shows.
func sortedAfter(info *types.Info, body *ast.BlockStmt, v types.Object, pos token.Pos) bool {
	var first *ast.Ident
	ast.Inspect(body, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Pos() > pos && info.Uses[id] == v && (first == nil || id.Pos() < first.Pos()) {
			first = id
		}
		return true
	})
	if first == nil {
		return false
	}
	sorted := false
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && len(call.Args) > 0 && call.Args[0] == ast.Expr(first) {
			name, _ := callee(info, call)
			sorted = sorters[name]
		}
		return !sorted
	})
	return sorted
}

// isConnector reports whether the package is a connector: its directory
// holds a connector.yaml.
func isConnector(pass *analysis.Pass) bool {
	for _, f := range pass.Files {
		name := pass.Fset.File(f.Pos()).Name()
		if _, err := os.Stat(filepath.Join(filepath.Dir(name), connectorspec.FileName)); err == nil {
			return true
		}
	}
	return false
}
