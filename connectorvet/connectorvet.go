// Package connectorvet is the static analysis certification runs over a
// connector's own code (generated files and tests are skipped): it reports
// what would make the connector nondeterministic or let it act outside its
// declared capabilities, each finding at its file:line with the rule and
// the fix. It runs as `flowgen certify`'s analysis check and, unchanged,
// as `go vet -vettool=$(which flowgen-vet)`.
//
// Rules:
//
//	clock       time.Now, time.Since, time.Until: use the clock capability (ctx.Now)
//	rand        math/rand, math/rand/v2, crypto/rand: use ctx.Uint64 (rng.seeded for Strict)
//	env         os.Getenv, os.LookupEnv, os.Environ: use params or secrets by handle
//	goroutine   go statements, and select over more than one channel (a
//	            wait that only races ctx.Done() is fine)
//	maporder    ranging over a map while building ordered output (append,
//	            writes to a builder or writer, fmt.Fprint*): sort the keys first
//	bypass      net/http clients, net.Dial, database/sql.Open: use the HTTP and
//	            db capabilities, which enforce egress and replay
//	write       file system writes in a connector declared Pure or ReadOnly
//
// A finding is accepted, with a reason, by a comment on its line or the
// line above: //flowgen:allow clock -- reason.
package connectorvet

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
)

// Analyzer reports the rules above.
var Analyzer = &analysis.Analyzer{
	Name:     "connectorvet",
	Doc:      "report nondeterminism and capability bypasses in flowgen connector code",
	URL:      "https://github.com/flowgen-dev/flowgen/tree/main/connectorvet",
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      run,
}

// calls maps "package.Func" or "package.Type.Method" to its rule and fix.
var calls = map[string][2]string{
	"time.Now":                     {"clock", "declare the clock capability and use ctx.Now"},
	"time.Since":                   {"clock", "declare the clock capability and subtract from ctx.Now"},
	"time.Until":                   {"clock", "declare the clock capability and subtract ctx.Now"},
	"os.Getenv":                    {"env", "take the value as a param, or a secret by handle (ctx.Secret)"},
	"os.LookupEnv":                 {"env", "take the value as a param, or a secret by handle (ctx.Secret)"},
	"os.Environ":                   {"env", "take the values as params, or secrets by handle (ctx.Secret)"},
	"net/http.Get":                 {"bypass", "declare http.read and use ctx.Get, which enforces the egress allowlist"},
	"net/http.Head":                {"bypass", "declare http.read and use ctx.Get"},
	"net/http.Post":                {"bypass", "declare http.write and use ctx.Do"},
	"net/http.PostForm":            {"bypass", "declare http.write and use ctx.Do"},
	"net/http.Client.Do":           {"bypass", "use ctx.Get or ctx.Do instead of an http.Client"},
	"net/http.Client.Get":          {"bypass", "use ctx.Get instead of an http.Client"},
	"net/http.Client.Post":         {"bypass", "use ctx.Do instead of an http.Client"},
	"net/http.Client.Head":         {"bypass", "use ctx.Get instead of an http.Client"},
	"net/http.Client.PostForm":     {"bypass", "use ctx.Do instead of an http.Client"},
	"net/http.Transport.RoundTrip": {"bypass", "use ctx.Get or ctx.Do"},
	"net.Dial":                     {"bypass", "talk to the network through the declared capabilities"},
	"net.DialTimeout":              {"bypass", "talk to the network through the declared capabilities"},
	"net.Dialer.Dial":              {"bypass", "talk to the network through the declared capabilities"},
	"net.Dialer.DialContext":       {"bypass", "talk to the network through the declared capabilities"},
	"database/sql.Open":            {"bypass", "declare db.read or db.write and use ctx.Query or ctx.Exec"},
	"database/sql.OpenDB":          {"bypass", "declare db.read or db.write and use ctx.Query or ctx.Exec"},
}

// writes are file system writes, effects a Pure or ReadOnly connector
// must not have.
var writes = map[string]bool{
	"os.WriteFile": true, "os.Create": true, "os.OpenFile": true, "os.Remove": true, "os.RemoveAll": true,
	"os.Mkdir": true, "os.MkdirAll": true, "os.Rename": true, "os.Symlink": true, "os.Link": true,
	"os.Chmod": true, "os.Chtimes": true, "os.Truncate": true, "os.CreateTemp": true, "os.MkdirTemp": true,
	"os.File.Write": true, "os.File.WriteString": true, "os.File.WriteAt": true, "os.File.Truncate": true,
}

// randPackages are sources of randomness.
var randPackages = map[string]bool{"math/rand": true, "math/rand/v2": true, "crypto/rand": true}

func run(pass *analysis.Pass) (any, error) {
	ins := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	effects := declaredEffects(pass.Pkg)
	skip := map[*token.File]bool{}
	allowed := map[string]bool{} // "file:line:rule"
	for _, f := range pass.Files {
		tf := pass.Fset.File(f.Pos())
		name := tf.Name()
		if ast.IsGenerated(f) || strings.HasSuffix(name, "_test.go") {
			skip[tf] = true
			continue
		}
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				text, ok := strings.CutPrefix(c.Text, "//flowgen:allow ")
				if !ok {
					continue
				}
				rule, _, _ := strings.Cut(strings.TrimSpace(text), " ")
				line := tf.Line(c.Pos())
				allowed[fmt.Sprintf("%s:%d:%s", name, line, rule)] = true
				allowed[fmt.Sprintf("%s:%d:%s", name, line+1, rule)] = true
			}
		}
	}
	report := func(pos token.Pos, rule, format string, args ...any) {
		p := pass.Fset.Position(pos)
		if allowed[fmt.Sprintf("%s:%d:%s", p.Filename, p.Line, rule)] {
			return
		}
		pass.Report(analysis.Diagnostic{Pos: pos, Category: rule, Message: rule + ": " + fmt.Sprintf(format, args...)})
	}
	inGenerated := func(n ast.Node) bool { return skip[pass.Fset.File(n.Pos())] }

	nodes := []ast.Node{(*ast.CallExpr)(nil), (*ast.GoStmt)(nil), (*ast.SelectStmt)(nil), (*ast.RangeStmt)(nil)}
	ins.Preorder(nodes, func(n ast.Node) {
		if inGenerated(n) {
			return
		}
		switch n := n.(type) {
		case *ast.CallExpr:
			name, pkg := callee(pass.TypesInfo, n)
			if name == "" {
				return
			}
			if r, ok := calls[name]; ok {
				report(n.Pos(), r[0], "%s: %s", name, r[1])
			}
			if randPackages[pkg] {
				report(n.Pos(), "rand", "%s draws unseeded randomness: declare rng.seeded (or rng) and use ctx.Uint64", name)
			}
			if writes[name] && (effects == "Pure" || effects == "ReadOnly") {
				report(n.Pos(), "write", "%s writes to the file system, but the connector is declared %s: declare effects: Effectful and blob.write, or drop the write", name, effects)
			}
		case *ast.GoStmt:
			report(n.Pos(), "goroutine", "a goroutine makes the order of effects and output depend on scheduling: do the work in Run, in order")
		case *ast.SelectStmt:
			chans, cancel := 0, false
			for _, c := range n.Body.List {
				if cc, ok := c.(*ast.CommClause); ok && cc.Comm != nil {
					chans++
					cancel = cancel || isContextDone(pass.TypesInfo, cc.Comm)
				}
			}
			// Waiting for one channel or cancellation is deterministic.
			if chans > 2 || (chans == 2 && !cancel) {
				report(n.Pos(), "goroutine", "select over %d channels picks a ready case at random", chans)
			}
		case *ast.RangeStmt:
			if _, isMap := pass.TypesInfo.TypeOf(n.X).Underlying().(*types.Map); isMap && buildsOrderedOutput(pass.TypesInfo, n.Body) {
				report(n.Pos(), "maporder", "ranging over a map gives its keys in random order, and this loop builds ordered output: range over slices.Sorted(maps.Keys(m))")
			}
		}
	})
	return nil, nil
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

// buildsOrderedOutput reports whether a loop body appends, writes to a
// builder or writer, or prints: things whose result depends on order.
func buildsOrderedOutput(info *types.Info, body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || found {
			return !found
		}
		if id, ok := call.Fun.(*ast.Ident); ok {
			if b, ok := info.Uses[id].(*types.Builtin); ok && b.Name() == "append" {
				found = true
			}
			return true
		}
		name, pkg := callee(info, call)
		switch {
		case pkg == "fmt" && (strings.HasPrefix(name, "fmt.Fprint") || strings.HasPrefix(name, "fmt.Print")):
			found = true
		case strings.HasSuffix(name, ".Write") || strings.HasSuffix(name, ".WriteString") || strings.HasSuffix(name, ".WriteByte") ||
			strings.HasSuffix(name, ".WriteRune") || strings.HasSuffix(name, ".Encode"):
			found = true
		}
		return true
	})
	return found
}

// declaredEffects reads the package's generated Effects constant (0 Pure,
// 1 ReadOnly, 2 Effectful); "" when the package has none.
func declaredEffects(pkg *types.Package) string {
	c, ok := pkg.Scope().Lookup("Effects").(*types.Const)
	if !ok {
		return ""
	}
	v, ok := constant.Int64Val(constant.ToInt(c.Val()))
	if !ok {
		return ""
	}
	switch v {
	case 0:
		return "Pure"
	case 1:
		return "ReadOnly"
	}
	return "Effectful"
}
