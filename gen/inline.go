package gen

import (
	"fmt"
	"go/types"
	"path/filepath"
	"strings"

	"github.com/dave/jennifer/jen"
	"golang.org/x/tools/go/packages"

	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/flowir"
)

// inlineFunc is a pure Go function a flow node names (uses: go:Name),
// checked with go/packages.
type inlineFunc struct {
	name    string
	in, out nodePort
	context bool // takes a context.Context first
}

// flowPackage loads the Go package of the flow's directory once.
func (fg *flowGen) flowPackage() (*packages.Package, error) {
	if fg.pkg != nil || fg.pkgErr != nil {
		return fg.pkg, fg.pkgErr
	}
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax | packages.NeedFiles,
		Dir:  filepath.Dir(fg.g.Flow.File),
	}
	pkgs, err := packages.Load(cfg, ".")
	switch {
	case err != nil:
		fg.pkgErr = err
	case len(pkgs) != 1 || pkgs[0].Types == nil:
		fg.pkgErr = fmt.Errorf("no Go package in %s", cfg.Dir)
	default:
		fg.pkg = pkgs[0]
	}
	return fg.pkg, fg.pkgErr
}

// inline resolves and checks the function of an inline node, reporting
// GEN001 at the node's uses: field when it is missing or has the wrong
// signature.
func (fg *flowGen) inline(n *flowir.GraphNode) (*inlineFunc, bool) {
	if f, ok := fg.inlines[n]; ok {
		return f, f != nil
	}
	fg.inlines[n] = nil
	name := strings.TrimPrefix(n.Uses, flowir.InlinePrefix)
	at := n.At("uses")
	want := fmt.Sprintf("func %s(in In) (Out, error), or func %s(ctx context.Context, in In) (Out, error)", name, name)
	pkg, err := fg.flowPackage()
	if err != nil {
		fg.diags.Add(at, diag.GEN001, "put the flow file in a directory that is a Go package (add a doc.go)", "go:%s: cannot load the flow's Go package: %v", name, err)
		return nil, false
	}
	obj := pkg.Types.Scope().Lookup(name)
	fn, isFunc := obj.(*types.Func)
	if obj == nil || !isFunc {
		fg.diags.Add(at, diag.GEN001, fmt.Sprintf("declare %s in package %s (%s)", want, pkg.Name, filepath.Dir(fg.g.Flow.File)),
			"go:%s: package %s has no function %s", name, pkg.Name, name)
		return nil, false
	}
	sig := fn.Type().(*types.Signature)
	decl := pkg.Fset.Position(fn.Pos())
	where := fmt.Sprintf("%s:%d", filepath.Base(decl.Filename), decl.Line)
	params, results := sig.Params(), sig.Results()
	f := &inlineFunc{name: name}
	first := 0
	if params.Len() == 2 && types.TypeString(params.At(0).Type(), nil) == "context.Context" {
		f.context, first = true, 1
	}
	ok := sig.TypeParams() == nil && !sig.Variadic() && params.Len() == first+1 && results.Len() == 2 &&
		types.TypeString(results.At(1).Type(), nil) == "error"
	if !ok {
		fg.diags.Add(at, diag.GEN001, "give it the signature "+want,
			"go:%s (%s) has signature %s, which a node cannot call", name, where, types.TypeString(sig, types.RelativeTo(pkg.Types)))
		return nil, false
	}
	var inOK, outOK bool
	f.in, inOK = portOf(params.At(first).Type(), pkg.Types.Path())
	f.out, outOK = portOf(results.At(0).Type(), pkg.Types.Path())
	if !inOK || !outOK {
		fg.diags.Add(at, diag.GEN001, "take and return named types, basic types, or slices, maps and pointers of them",
			"go:%s (%s): a parameter or result type cannot be written in generated code", name, where)
		return nil, false
	}
	fg.inlines[n] = f
	return f, true
}

// portOf renders a Go type for generated code in package self, with its
// identity (aliases resolved).
func portOf(t types.Type, self string) (nodePort, bool) {
	t = types.Unalias(t)
	switch x := t.(type) {
	case *types.Named:
		obj := x.Obj()
		if x.TypeArgs().Len() > 0 {
			return nodePort{}, false
		}
		if obj.Pkg() == nil || obj.Pkg().Path() == self {
			return nodePort{code: jen.Id(obj.Name()), id: goTypeID{self, obj.Name()}}, true
		}
		return nodePort{code: jen.Qual(obj.Pkg().Path(), obj.Name()), id: goTypeID{obj.Pkg().Path(), obj.Name()}}, true
	case *types.Basic:
		return nodePort{code: jen.Id(x.Name()), id: goTypeID{"", x.Name()}}, true
	case *types.Slice:
		e, ok := portOf(x.Elem(), self)
		return nodePort{code: jen.Index().Add(e.code), id: goTypeID{"[]" + e.id.pkg, e.id.name}}, ok
	case *types.Pointer:
		e, ok := portOf(x.Elem(), self)
		return nodePort{code: jen.Op("*").Add(e.code), id: goTypeID{"*" + e.id.pkg, e.id.name}}, ok
	case *types.Map:
		k, kok := portOf(x.Key(), self)
		e, eok := portOf(x.Elem(), self)
		return nodePort{code: jen.Map(k.code).Add(e.code), id: goTypeID{"map[" + k.id.pkg + "." + k.id.name + "]" + e.id.pkg, e.id.name}}, kok && eok
	}
	return nodePort{}, false
}
