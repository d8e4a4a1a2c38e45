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
			case *ast.FuncDecl:
				if n.Body != nil {
					checkBody(info, n.Body, report)
				}
				return false
			case *ast.FuncLit:
				checkBody(info, n.Body, report)
				return false
			}
			return true
		})
	}
}

// checkBody checks one function's body; function literals in it are
// checked as functions of their own.
func checkBody(info *types.Info, body *ast.BlockStmt, report func(token.Pos, Rule, string)) {
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			checkBody(info, n.Body, report)
			return false
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
			t := info.TypeOf(n.X)
			if t == nil {
				return true
			}
			if _, isMap := t.Underlying().(*types.Map); !isMap {
				return true
			}
			// What the loop appends to is fine when it is sorted before
			// anything else can see it: the idiom of collecting a map's
			// keys, then sorting them.
			appended, other := orderedOutput(info, n.Body)
			unsorted := other
			for _, v := range appended {
				unsorted = unsorted || !sortedAfter(info, body, v, n.End())
			}
			if unsorted {
				report(n.Pos(), MapOrder, "ranging over a map gives its keys in random order, and this loop builds ordered output: range over slices.Sorted(maps.Keys(m)), or sort what it builds")
			}
		}
		return true
	})
}
