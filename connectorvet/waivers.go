package connectorvet

import (
	"go/ast"
	"go/token"
	"strings"
)

// waiverPrefix starts a waiver comment: //flowgen:allow RULE -- reason.
// It accepts findings of RULE on its own line or the next, or on any
// call of the artifact's code at those lines that a finding's path runs
// through. //flowgen:allow RULE@PACKAGE -- reason accepts the findings of
// RULE whose sink is in the dependency PACKAGE, wherever they are.
const waiverPrefix = "//flowgen:allow "

// parseWaivers reads every waiver comment of files.
func parseWaivers(fset *token.FileSet, files []*ast.File) []Waiver {
	var out []Waiver
	for _, f := range files {
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				text, ok := strings.CutPrefix(c.Text, waiverPrefix)
				if !ok {
					continue
				}
				rule, reason, _ := strings.Cut(strings.TrimSpace(text), " ")
				reason = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(reason), "--"))
				rule, pkg, _ := strings.Cut(rule, "@")
				w := Waiver{Pos: fset.Position(c.Pos()), Rule: Rule(rule), Package: pkg, Reason: reason}
				switch {
				case !Rule(rule).known():
					w.Refused = "unknown rule " + rule
				case !w.Rule.Waivable():
					w.Refused = "rule " + rule + " can never be waived"
				case reason == "":
					w.Refused = "a waiver must give its reason: //flowgen:allow " + rule + " -- why this is safe"
				}
				out = append(out, w)
			}
		}
	}
	return out
}

func (r Rule) known() bool {
	switch r {
	case Clock, Rand, Env, Host, FS, Write, Exec, Net, Syscall, Unsafe, Reflect, Plugin, Cgo, Asm, Goroutine, Select,
		MapOrder, Global, Bypass, Excluded, Trust:
		return true
	}
	return false
}

// covers reports whether w sits on pos's line or the line above it.
func (w *Waiver) covers(pos token.Position) bool {
	return pos.Filename == w.Pos.Filename && (pos.Line == w.Pos.Line || pos.Line == w.Pos.Line+1)
}

// waive finds the waiver that accepts f: one for f's rule on the line of
// the finding or of a call on its path. A matching waiver that may not
// accept it (an unwaivable rule, no reason) accepts nothing.
func waive(f *Finding, waivers []Waiver) *Waiver {
	for i := range waivers {
		w := &waivers[i]
		if w.Rule != f.Rule {
			continue
		}
		var hit bool
		if w.Package != "" {
			hit = len(f.Path) > 0 && packageOf(f.Path[len(f.Path)-1].Func) == w.Package
		} else {
			hit = w.covers(f.Pos)
			for _, fr := range f.Path {
				hit = hit || w.covers(fr.Pos)
			}
		}
		if !hit || w.Refused != "" {
			continue
		}
		w.Used = true
		return w
	}
	return nil
}

// packageOf is the import path of a function named as Frame.Func names
// it ("example.com/lib.init", "example.com/lib.(*T).M").
func packageOf(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	dot := strings.IndexByte(fn[slash+1:], '.')
	if dot < 0 {
		return fn
	}
	return fn[:slash+1+dot]
}
