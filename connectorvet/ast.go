package connectorvet

import (
	"go/ast"
	"go/token"
	"go/types"
	"strconv"
	"strings"
)

// astChecks reports what only the syntax shows, in files: a select over
// more than one channel (other than one channel and ctx.Done()), and a
// range over a map whose body builds ordered output.
func astChecks(fset *token.FileSet, files []*ast.File, info *types.Info, report func(token.Pos, Rule, string)) {
	for _, f := range files {
		if strings.HasSuffix(fset.File(f.Pos()).Name(), "_test.go") {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectStmt:
				chans, cancel := 0, false
				for _, c := range n.Body.List {
					if cc, ok := c.(*ast.CommClause); ok && cc.Comm != nil {
						chans++
						cancel = cancel || isContextDone(info, cc.Comm)
					}
				}
				// Waiting for one channel or cancellation is deterministic.
				if chans > 2 || (chans == 2 && !cancel) {
					report(n.Pos(), Select, "select over "+strconv.Itoa(chans)+" channels picks a ready case at random")
				}
			case *ast.RangeStmt:
				if t := info.TypeOf(n.X); t != nil {
					if _, isMap := t.Underlying().(*types.Map); isMap && buildsOrderedOutput(info, n.Body) {
						report(n.Pos(), MapOrder, "ranging over a map gives its keys in random order, and this loop builds ordered output: range over slices.Sorted(maps.Keys(m))")
					}
				}
			}
			return true
		})
	}
}
