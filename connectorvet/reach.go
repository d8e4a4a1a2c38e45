package connectorvet

import (
	"context"
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/tools/go/callgraph"
	"golang.org/x/tools/go/callgraph/vta"
	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"
	"golang.org/x/tools/go/ssa/ssautil"

	"github.com/flowgen-dev/flowgen/flowtype"
)

// Config says what Reach analyses.
type Config struct {
	// Dir is the connector package's directory; its packages (it and
	// those below it) are the artifact's own code.
	Dir string
	// Env is the go command's environment (nil: the process's).
	Env []string
	// Effects and Determinism are what the spec declares.
	Effects     flowtype.Effects
	Determinism flowtype.Determinism
	// Generated lists files (absolute paths) whose bytes equal what
	// flowgen gen writes for the spec: only they may call the runtime's
	// internals. Any other file, whatever its header says, is the
	// author's.
	Generated []string
}

// Frame is one step of a call path.
type Frame struct {
	// Func names the function ("charge.(*Connector).Run").
	Func string
	// Pos is where it calls the next frame's function (or, for the last
	// frame, the sink).
	Pos token.Position
}

// Finding is one forbidden thing reachable from an entry point.
type Finding struct {
	Rule    Rule
	Pos     token.Position
	Message string
	// Path runs from the entry point to the function holding the sink.
	Path []Frame
	// Waiver is the comment that accepted the finding, if one did.
	Waiver *Waiver
}

// Waiver is one //flowgen:allow comment in the artifact's code.
type Waiver struct {
	Pos  token.Position
	Rule Rule
	// Package, when set (//flowgen:allow RULE@PACKAGE), names the
	// dependency whose findings of Rule it accepts, wherever they are:
	// a dependency's code has no line of the artifact's to waive at.
	Package string
	Reason  string
	// Used is true when it accepted at least one finding.
	Used bool
	// Refused says why it could accept nothing: its rule can never be
	// waived, or it gives no reason.
	Refused string
}

// Result is what Reach found.
type Result struct {
	// Findings are not waived; any makes the connector fail.
	Findings []Finding
	// Waived findings were accepted by a waiver; they are evidence.
	Waived []Finding
	// Waivers lists every //flowgen:allow in the artifact, used or not.
	Waivers []Waiver
	// Packages counts the packages analysed from source (the artifact's
	// and its non-standard dependencies').
	Packages int
	// Functions counts the reachable functions traversed.
	Functions int
	// Root is the import path of the connector package.
	Root string
}

// LoadError is returned when the connector's packages do not load; its
// Problems say why, one per line.
type LoadError struct{ Problems []string }

func (e *LoadError) Error() string {
	return "the connector's packages do not load:\n" + strings.Join(e.Problems, "\n")
}

// trustedPrefixes are the packages of flowgen's runtime that generated code
// runs on. Certification supplies them (a registry builds against its own
// copy), so they are not analysed; the artifact's code may call only
// their connector-facing API (trustedAPI). Any other package, including
// the rest of flowgen's module, is analysed like any dependency.
var trustedPrefixes = []string{
	"github.com/flowgen-dev/flowgen/runtime", // and its subpackages
	"github.com/flowgen-dev/flowgen/flowtype",
	"github.com/flowgen-dev/flowgen/internal/",
}

func trusted(path string) bool {
	for _, p := range trustedPrefixes {
		if path == p || strings.HasPrefix(path, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}

// trustedAPI is what hand-written code may call in the trusted packages:
// errors and their kinds, retry policy arithmetic, and pure helpers.
// Everything else there (building capabilities, contexts, engines, stores,
// job ids from the clock) is reserved for generated code and the runtime
// itself. runtime re-exports the errors and the retry policy of runtype
// under the same names, so a call through either is judged alike.
func trustedAPI(pkg, member string) bool {
	switch pkg {
	case "github.com/flowgen-dev/flowgen/flowtype", "github.com/flowgen-dev/flowgen/runtime/idemkey":
		return true
	case "github.com/flowgen-dev/flowgen/runtime", "github.com/flowgen-dev/flowgen/runtime/runtype":
		switch member {
		case "Errorf", "NewError", "KindOf", "NotGranted",
			// decoding and validation of generated schema types (schema.go)
			"PathJoin", "PathIndex", "PathKey", "DecodeObject", "DecodeField", "DecodeOptional", "DecodeWith",
			"DecodeSlice", "DecodeElements", "DecodeEntries", "Discriminator", "NotOneOf", "Min", "Max", "OneOf",
			"Validate", "Ptr", "Redact", "ClassAt":
			return true
		}
		typ, _, _ := strings.Cut(member, ".")
		switch typ {
		case "Error", "ErrorKind", "RetryPolicy", "HTTPResponse", "Effects", "Determinism", "RetryOwner", "TypedNode",
			"Object", "Validator", "FieldError":
			return true
		}
	}
	return false
}

// Reach builds SSA for the connector's packages and every non-standard
// package they depend on, and walks every path from the entry points
// (package initializers, the Connector's methods, every method of the
// artifact's types, which the runtime may call through interfaces) to the
// things the connector may not do. The standard library and the trusted
// runtime are not walked into: calls into them are judged at the call by
// the classification in stdSinks and trustedAPI, and functions or values
// of the connector's that escape into them are treated as called.
func Reach(ctx context.Context, cfg Config) (*Result, error) {
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	a := &analyzer{cfg: cfg, dir: dir, generated: map[string]bool{}, own: map[*types.Package]bool{},
		kind: map[*types.Package]pkgKind{}, parent: map[*ssa.Function]edge{}, seen: map[*ssa.Function]bool{},
		findings: map[string]*Finding{}, iface: map[types.Type]bool{}}
	for _, g := range cfg.Generated {
		a.generated[g] = true
	}
	roots, analysed, err := a.load(ctx)
	if err != nil {
		return nil, err
	}
	prog, pkgs := ssautil.Packages(analysed, ssa.InstantiateGenerics)
	prog.Build()
	a.prog = prog
	// Dynamic calls (function values, interface methods) are resolved by
	// variable type analysis over the analysed code, as govulncheck does.
	funcs := map[*ssa.Function]bool{}
	for fn := range ssautil.AllFunctions(prog) {
		if fn.Blocks != nil {
			funcs[fn] = true
		}
	}
	a.cg = vta.CallGraph(funcs, nil)
	for i, p := range pkgs {
		if p == nil {
			return nil, &LoadError{Problems: []string{analysed[i].PkgPath + ": does not type-check"}}
		}
		a.kind[p.Pkg] = analysedPkg
		if slices.Contains(roots, analysed[i].PkgPath) {
			a.own[p.Pkg] = true
		}
	}
	for _, p := range prog.AllPackages() {
		if _, ok := a.kind[p.Pkg]; ok {
			continue
		}
		if trusted(p.Pkg.Path()) {
			a.kind[p.Pkg] = trustedPkg
		} else {
			a.kind[p.Pkg] = stdPkg
		}
	}
	for i, p := range pkgs {
		if a.own[p.Pkg] {
			a.comments = append(a.comments, analysed[i].Syntax...)
			astChecks(analysed[i].Fset, analysed[i].Syntax, analysed[i].TypesInfo, func(pos token.Pos, r Rule, msg string) {
				a.add(r, a.position(pos), nil, msg)
			})
		}
	}

	// Run first, so that what it reaches is known for the global rule.
	var run, other []*ssa.Function
	for _, p := range pkgs {
		if init := p.Func("init"); init != nil {
			other = append(other, init)
		}
		if !a.own[p.Pkg] {
			continue
		}
		for _, m := range p.Members {
			t, ok := m.(*ssa.Type)
			if !ok {
				continue
			}
			for _, fn := range a.methods(t.Type()) {
				if t.Name() == "Connector" && fn.Name() == "Run" && p == pkgs[0] {
					run = append(run, fn)
				} else {
					other = append(other, fn)
				}
			}
		}
	}
	a.runPhase = true
	a.walk(run)
	a.runPhase = false
	a.walk(other)
	a.judgeGlobals()
	a.judgeKept()

	res := &Result{Packages: len(analysed), Functions: len(a.seen), Root: roots[0]}
	res.Waivers = parseWaivers(a.prog.Fset, a.comments)
	for i := range res.Waivers {
		if w := &res.Waivers[i]; w.Package != "" && w.Refused == "" && slices.Contains(roots, w.Package) {
			w.Refused = "it names the connector's own package " + w.Package + ": waive its findings at their lines"
		}
	}
	for _, f := range a.findings {
		if w := waive(f, res.Waivers); w != nil {
			f.Waiver = w
			res.Waived = append(res.Waived, *f)
			continue
		}
		res.Findings = append(res.Findings, *f)
	}
	for _, list := range [][]Finding{res.Findings, res.Waived} {
		sort.Slice(list, func(i, j int) bool {
			return lessPos(list[i].Pos, list[j].Pos) || list[i].Pos == list[j].Pos && list[i].Rule < list[j].Rule
		})
	}
	return res, nil
}

type pkgKind int

const (
	analysedPkg pkgKind = iota
	stdPkg
	trustedPkg
)

type edge struct {
	from *ssa.Function
	pos  token.Pos
}

type analyzer struct {
	cfg       Config
	dir       string
	prog      *ssa.Program
	generated map[string]bool
	own       map[*types.Package]bool
	kind      map[*types.Package]pkgKind
	parent    map[*ssa.Function]edge
	seen      map[*ssa.Function]bool
	fromRun   map[*ssa.Function]bool
	runPhase  bool
	queue     []*ssa.Function
	findings  map[string]*Finding
	iface     map[types.Type]bool
	comments  []*ast.File // the artifact's files, for waivers
	kept      []keptValue
	fset      *token.FileSet
	cg        *callgraph.Graph
	// globals are the package state writes reachable from Run, judged
	// once the walk is over (judgeGlobals), and funcs how each function
	// value is used, to tell lazy initialisation under sync.Once apart.
	globals []globalWrite
	funcs   map[*ssa.Function]*funcUses
	counted map[*ssa.Function]bool
}

// globalWrite is a write to package state that Run reaches.
type globalWrite struct {
	fn  *ssa.Function
	pos token.Pos
	msg string
}

// funcUses counts the uses of a function in the walked code: as a value
// anywhere, as the function sync.Once runs, and whether it is also called
// by name.
type funcUses struct {
	values, once int
	called       bool
}

// load lists the packages the connector builds from, checks where the
// trusted ones come from, and loads the analysed ones with syntax: the
// artifact's own and every non-standard dependency. The standard library
// and the trusted runtime come from export data.
func (a *analyzer) load(ctx context.Context) (roots []string, analysed []*packages.Package, err error) {
	env := a.cfg.Env
	if env == nil {
		env = os.Environ()
	}
	cfg := &packages.Config{Context: ctx, Dir: a.dir, Env: env,
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedDeps | packages.NeedModule}
	graph, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, nil, &LoadError{Problems: []string{err.Error()}}
	}
	// Analysed: every package reachable from the artifact's without going
	// through the standard library or the trusted runtime. What the runtime
	// itself depends on is the runtime's business.
	var problems, paths []string
	packages.Visit(graph, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			problems = append(problems, e.Error())
		}
		if trusted(p.PkgPath) {
			for _, f := range p.GoFiles {
				if within(a.dir, f) {
					a.add(Trust, token.Position{Filename: f}, nil, fmt.Sprintf("package %s of the trusted runtime is built from the artifact's own files", p.PkgPath))
					break
				}
			}
		}
	})
	seen := map[*packages.Package]bool{}
	var walk func(p *packages.Package)
	walk = func(p *packages.Package) {
		_, classified := stdSinks[p.PkgPath]
		if seen[p] || trusted(p.PkgPath) || classified || (p.Module == nil && !within(a.dir, dirOf(p))) {
			return
		}
		seen[p] = true
		paths = append(paths, p.PkgPath)
		for _, imp := range p.Imports {
			walk(imp)
		}
	}
	for _, p := range graph {
		walk(p)
	}
	for _, p := range graph {
		roots = append(roots, p.PkgPath)
	}
	if len(problems) > 0 {
		return nil, nil, &LoadError{Problems: problems}
	}
	a.goMod()
	cfg.Mode = packages.LoadSyntax | packages.NeedModule | packages.NeedFiles
	analysed, err = packages.Load(cfg, paths...)
	if err != nil {
		return nil, nil, &LoadError{Problems: []string{err.Error()}}
	}
	packages.Visit(analysed, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			problems = append(problems, e.Error())
		}
	})
	if len(problems) > 0 {
		return nil, nil, &LoadError{Problems: problems}
	}
	if len(analysed) > 0 {
		a.fset = analysed[0].Fset
	}
	// The connector package itself first.
	slices.SortStableFunc(analysed, func(x, y *packages.Package) int {
		return boolInt(x.PkgPath != roots[0]) - boolInt(y.PkgPath != roots[0])
	})
	for _, p := range analysed {
		a.cgo(p, slices.Contains(roots, p.PkgPath))
	}
	return roots, analysed, nil
}

// goMod refuses replace directives in the connector's own go.mod: every
// module that requires this one ignores them, so the certified build would
// not be the build consumers get.
func (a *analyzer) goMod() {
	path := filepath.Join(a.dir, "go.mod")
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	f, err := modfile.Parse(path, data, nil) // ParseLax would skip replace directives
	if err != nil {
		return
	}
	for _, r := range f.Replace {
		a.add(Trust, token.Position{Filename: path, Line: r.Syntax.Start.Line, Column: r.Syntax.Start.LineRune}, nil,
			fmt.Sprintf("go.mod replaces %s with %s: modules that require this one ignore replace directives, so certification would vouch for another build", r.Old.Path, r.New.Path))
	}
}

// cgo reports C code: files importing "C" (excluded from the certified
// build, which has cgo off, but compiled where cgo is on), and for the
// artifact's own packages any Go file the certified build leaves out.
func (a *analyzer) cgo(p *packages.Package, own bool) {
	for _, f := range p.IgnoredFiles {
		if strings.HasSuffix(f, "_test.go") || !strings.HasSuffix(f, ".go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			continue
		}
		importsC := slices.ContainsFunc(parsed.Imports, func(s *ast.ImportSpec) bool { return s.Path.Value == `"C"` }) && builtWithCgo(parsed)
		switch {
		case importsC:
			a.add(Cgo, token.Position{Filename: f, Line: 1, Column: 1}, nil, fmt.Sprintf("%s uses cgo: C code is not analysed and does not build in the certified configuration", filepath.Base(f)))
		case own:
			a.add(Excluded, token.Position{Filename: f, Line: 1, Column: 1}, nil, fmt.Sprintf("%s is not part of the certified build (its build constraints exclude it), so certification cannot vouch for it", filepath.Base(f)))
		}
	}
}

// builtWithCgo reports whether a build with cgo on, for some platform
// and Go version, with no custom build tags, compiles file: its //go:build
// line holds when cgo, every GOOS, GOARCH, unix and go1.N tag are set and
// every other tag is not. A file behind a tag of its own (x/text's
// //go:build icu) is compiled only by a consumer who asks for it.
func builtWithCgo(file *ast.File) bool {
	for _, group := range file.Comments {
		if group.Pos() >= file.Package {
			break
		}
		for _, c := range group.List {
			if !constraint.IsGoBuild(c.Text) {
				continue
			}
			expr, err := constraint.Parse(c.Text)
			if err != nil {
				return true // the go command refuses it anyway; say what it holds
			}
			return expr.Eval(func(tag string) bool {
				return tag == "cgo" || tag == "unix" || knownPlatformTag(tag) || strings.HasPrefix(tag, "go1.")
			})
		}
	}
	return true
}

// knownPlatformTag reports whether tag names a GOOS or GOARCH the go
// command knows.
func knownPlatformTag(tag string) bool {
	for _, list := range []string{
		"aix android darwin dragonfly freebsd hurd illumos ios js linux nacl netbsd openbsd plan9 solaris wasip1 windows zos",
		"386 amd64 arm arm64 loong64 mips mipsle mips64 mips64le ppc64 ppc64le riscv64 s390x wasm",
	} {
		if slices.Contains(strings.Fields(list), tag) {
			return true
		}
	}
	return false
}

func dirOf(p *packages.Package) string {
	if len(p.GoFiles) > 0 {
		return filepath.Dir(p.GoFiles[0])
	}
	return ""
}

func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// methods returns every method of named type t and of *t.
func (a *analyzer) methods(t types.Type) []*ssa.Function {
	var out []*ssa.Function
	for _, typ := range []types.Type{t, types.NewPointer(t)} {
		ms := a.prog.MethodSets.MethodSet(typ)
		for i := range ms.Len() {
			if fn := a.prog.MethodValue(ms.At(i)); fn != nil && !slices.Contains(out, fn) {
				out = append(out, fn)
			}
		}
	}
	return out
}

// walk traverses everything reachable from entries.
func (a *analyzer) walk(entries []*ssa.Function) {
	if a.fromRun == nil {
		a.fromRun = map[*ssa.Function]bool{}
	}
	for _, e := range entries {
		a.reach(e, edge{})
	}
	for len(a.queue) > 0 {
		fn := a.queue[0]
		a.queue = a.queue[1:]
		a.visit(fn)
	}
}

// reach marks fn reachable (through e) and queues it.
func (a *analyzer) reach(fn *ssa.Function, e edge) {
	if e.from != nil && !e.pos.IsValid() {
		e.pos = e.from.Pos()
	}
	if a.runPhase && !a.fromRun[fn] {
		a.fromRun[fn] = true
		if !a.seen[fn] {
			a.seen[fn] = true
			a.parent[fn] = e
		}
		a.queue = append(a.queue, fn)
		return
	}
	if a.seen[fn] {
		return
	}
	a.seen[fn] = true
	a.parent[fn] = e
	a.queue = append(a.queue, fn)
}

// pkgOf is the package a function belongs to, for classification; nil for
// synthetic wrappers, which are walked through.
func pkgOf(fn *ssa.Function) *types.Package {
	if o := fn.Origin(); o != nil {
		fn = o
	}
	if fn.Synthetic != "" && fn.Object() == nil {
		return nil
	}
	if obj := fn.Object(); obj != nil {
		return obj.Pkg()
	}
	if fn.Pkg != nil {
		return fn.Pkg.Pkg
	}
	return nil
}

// member names fn within its package: "Func" or "Type.Method".
func member(fn *ssa.Function) string {
	if o := fn.Origin(); o != nil {
		fn = o
	}
	if recv := fn.Signature.Recv(); recv != nil {
		if n := namedOf(recv.Type()); n != nil {
			return n.Obj().Name() + "." + fn.Name()
		}
	}
	return fn.Name()
}

func namedOf(t types.Type) *types.Named {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, _ := types.Unalias(t).(*types.Named)
	return n
}

// handWritten reports whether fn's code is the author's and not verified
// generated code.
func (a *analyzer) handWritten(fn *ssa.Function) bool {
	return !a.generated[a.position(fn.Pos()).Filename]
}

// visit judges every instruction of fn.
func (a *analyzer) visit(fn *ssa.Function) {
	pkg := pkgOf(fn)
	own := pkg != nil && a.own[pkg]
	for _, b := range fn.Blocks {
		for _, instr := range b.Instrs {
			pos := instr.Pos()
			switch in := instr.(type) {
			case ssa.CallInstruction:
				call := in.Common()
				callees := a.dynamic(fn, in)
				if c := call.StaticCallee(); c != nil {
					callees = []*ssa.Function{c}
				}
				a.countUses(fn, call)
				opaque := false
				for _, c := range callees {
					a.callee(fn, c, call.Pos())
					if p := pkgOf(c); p != nil && a.kind[p] != analysedPkg {
						opaque = true
					}
				}
				if opaque || (call.IsInvoke() && len(callees) == 0) {
					// Function values handed to code that is not walked
					// (the standard library, the runtime, an interface
					// whose implementations are theirs) may be called.
					a.escape(fn, call.Args, call.Pos())
				}
				if _, isGo := in.(*ssa.Go); isGo {
					a.add(Goroutine, a.position(call.Pos()), a.path(fn), "a goroutine makes the order of effects and output depend on scheduling")
				}
			case *ssa.MakeInterface:
				a.madeInterface(fn, in)
				if _, isFunc := in.X.Type().Underlying().(*types.Signature); isFunc {
					a.escape(fn, []ssa.Value{in.X}, pos)
				}
			case *ssa.Convert:
				if own && (isUnsafePointer(in.X.Type()) || isUnsafePointer(in.Type())) {
					a.add(Unsafe, a.position(pos), a.path(fn), "a conversion through unsafe.Pointer escapes the type system")
				}
			case *ssa.TypeAssert:
				if n := namedOf(in.AssertedType); n != nil && n.Obj().Pkg() != nil && trusted(n.Obj().Pkg().Path()) &&
					!trustedAPI(n.Obj().Pkg().Path(), n.Obj().Name()+".") && (!own || a.handWritten(fn)) {
					a.add(Bypass, a.position(pos), a.path(fn), fmt.Sprintf("a type assertion to %s reaches the runtime's internals", types.TypeString(in.AssertedType, nil)))
				}
			case *ssa.Store:
				if a.fromRun[fn] && a.strict() {
					if g := rootGlobal(in.Addr); g != nil && g.Pkg != nil && a.kind[g.Pkg.Pkg] == analysedPkg {
						a.globals = append(a.globals, globalWrite{fn, pos, fmt.Sprintf("Run writes package variable %s, state that outlives the activation", g.Name())})
					}
				}
			case *ssa.MapUpdate:
				if a.fromRun[fn] && a.strict() {
					if g := rootGlobal(in.Map); g != nil && g.Pkg != nil && a.kind[g.Pkg.Pkg] == analysedPkg {
						a.globals = append(a.globals, globalWrite{fn, pos, fmt.Sprintf("Run writes package map %s, state that outlives the activation", g.Name())})
					}
				}
			}
			if _, isCall := instr.(ssa.CallInstruction); !isCall && !a.counted[fn] {
				for _, op := range instr.Operands(nil) {
					if op == nil {
						continue
					}
					if f, ok := (*op).(*ssa.Function); ok {
						a.uses(f).values++
					}
				}
			}
			// Classified package variables (os.Args, time.Local,
			// http.DefaultClient, crypto/rand.Reader).
			for _, op := range instr.Operands(nil) {
				if op == nil || *op == nil {
					continue
				}
				if v, ok := (*op).(*ssa.Global); ok && v.Pkg != nil && a.kind[v.Pkg.Pkg] == stdPkg {
					if r := classify(v.Pkg.Pkg.Path(), v.Name()); r != "" {
						msg := fmt.Sprintf("uses %s.%s: %s", v.Pkg.Pkg.Path(), v.Name(), describe(r))
						if kept := a.keptByDependency(fn, instr); kept != nil {
							a.kept = append(a.kept, keptValue{rule: r, pos: a.position(pos), path: a.path(fn), msg: msg, in: kept})
							continue
						}
						a.add(r, a.position(pos), a.path(fn), msg)
					}
				}
			}
		}
	}
	if a.counted == nil {
		a.counted = map[*ssa.Function]bool{}
	}
	a.counted[fn] = true
}

// dynamic returns the functions a call without a static callee may
// reach, by the VTA call graph.
func (a *analyzer) dynamic(fn *ssa.Function, site ssa.CallInstruction) []*ssa.Function {
	node := a.cg.Nodes[fn]
	if node == nil {
		return nil
	}
	var out []*ssa.Function
	for _, e := range node.Out {
		if e.Site == site && e.Callee.Func != nil {
			out = append(out, e.Callee.Func)
		}
	}
	return out
}

// escape judges function values that leave the walked code: the
// artifact's and its dependencies' are reached, the standard library's
// and the runtime's are judged as if called.
func (a *analyzer) escape(fn *ssa.Function, values []ssa.Value, pos token.Pos) {
	for _, v := range values {
		var f *ssa.Function
		switch x := v.(type) {
		case *ssa.Function:
			f = x
		case *ssa.MakeClosure:
			f, _ = x.Fn.(*ssa.Function)
		}
		if f != nil {
			a.callee(fn, f, pos)
		}
	}
}

func (a *analyzer) strict() bool { return a.cfg.Determinism <= flowtype.Stable }

// uses is the record of f's uses.
func (a *analyzer) uses(f *ssa.Function) *funcUses {
	if a.funcs == nil {
		a.funcs = map[*ssa.Function]*funcUses{}
	}
	u := a.funcs[f]
	if u == nil {
		u = &funcUses{}
		a.funcs[f] = u
	}
	return u
}

// countUses records, once per calling function's visit, the calls by
// name and the function values call passes: to sync.Once's Do (or
// sync.OnceFunc, OnceValue, OnceValues), a use as what Once runs.
func (a *analyzer) countUses(fn *ssa.Function, call *ssa.CallCommon) {
	if a.counted[fn] {
		return
	}
	if f, ok := call.Value.(*ssa.Function); ok && !call.IsInvoke() {
		a.uses(f).called = true
	}
	once := false
	if c := call.StaticCallee(); c != nil {
		if p := pkgOf(c); p != nil && p.Path() == "sync" {
			switch member(c) {
			case "Once.Do", "OnceFunc", "OnceValue", "OnceValues":
				once = true
			}
		}
	}
	for _, v := range call.Args {
		if f, ok := v.(*ssa.Function); ok {
			u := a.uses(f)
			u.values++
			if once {
				u.once++
			}
		}
	}
}

// judgeGlobals reports the writes to package state that Run reaches, but
// for lazy initialisation: writes made directly by a function that only
// sync.Once runs (never called by name, never used as a value otherwise,
// and no closure, so it captures nothing of an activation) happen once
// per process, as an init function's do.
func (a *analyzer) judgeGlobals() {
	for _, w := range a.globals {
		if u := a.funcs[w.fn]; u != nil && u.once > 0 && u.values == u.once && !u.called {
			continue
		}
		a.add(Global, a.position(w.pos), a.path(w.fn), w.msg)
	}
}

// callee judges a call (or a use as a value) of callee from fn.
func (a *analyzer) callee(fn, callee *ssa.Function, pos token.Pos) {
	pkg := pkgOf(callee)
	if pkg == nil { // synthetic wrapper
		if callee.Blocks != nil {
			a.reach(callee, edge{fn, pos})
		}
		return
	}
	name := pkg.Path() + "." + member(callee)
	how := "calls"
	switch a.kind[pkg] {
	case stdPkg:
		if r := classify(pkg.Path(), member(callee)); r != "" {
			a.add(r, a.position(pos), a.path(fn), fmt.Sprintf("%s %s: %s", how, name, describe(r)))
		}
	case trustedPkg:
		if !trustedAPI(pkg.Path(), member(callee)) && (!a.own[pkgOf(fn)] || a.handWritten(fn)) {
			a.add(Bypass, a.position(pos), a.path(fn), fmt.Sprintf("%s %s, which is the runtime's, not a capability", how, name))
		}
	default:
		if callee.Blocks == nil && callee.Origin() == nil {
			rule, what := Asm, "is implemented in assembly"
			if !hasAsm(callee) {
				rule, what = Syscall, "has no body: a //go:linkname to a function the analysis cannot see"
			}
			a.add(rule, a.position(pos), a.path(fn), fmt.Sprintf("%s %s, which %s", how, name, what))
			return
		}
		a.reach(callee, edge{fn, pos})
	}
}

// hasAsm reports whether fn's package has assembly files.
func hasAsm(fn *ssa.Function) bool {
	if fn.Pkg == nil {
		return false
	}
	f := fn.Prog.Fset.File(fn.Pos())
	if f == nil {
		return false
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(f.Name()), "*.s"))
	return len(matches) > 0
}

// madeInterface: a value of type T became an interface. The code that
// receives it may call its methods: every method of the artifact's and
// its dependencies' types (and of the types inside them, which reflection
// reaches), and, for a standard library type, the methods the interface
// names, judged by the classification.
func (a *analyzer) madeInterface(fn *ssa.Function, in *ssa.MakeInterface) {
	pos := in.Pos()
	if !pos.IsValid() {
		pos = fn.Pos() // an implicit conversion has no position of its own
	}
	t := in.X.Type()
	n := namedOf(t)
	if n == nil || n.Obj().Pkg() == nil {
		return
	}
	switch a.kind[n.Obj().Pkg()] {
	case analysedPkg:
		a.addType(fn, t, pos)
	case stdPkg:
		iface, ok := in.Type().Underlying().(*types.Interface)
		if !ok {
			return
		}
		for i := range iface.NumMethods() {
			m := iface.Method(i).Name()
			if r := classify(n.Obj().Pkg().Path(), n.Obj().Name()+"."+m); r != "" {
				name := n.Obj().Pkg().Path() + "." + n.Obj().Name() + "." + m
				a.add(r, a.position(pos), a.path(fn), fmt.Sprintf("makes a %s usable as %s, whose %s: %s", n.Obj().Name(), types.TypeString(in.Type(), nil), name, describe(r)))
			}
		}
	}
}

// addType makes every method of t, and of the named types its structure
// holds, reachable.
func (a *analyzer) addType(fn *ssa.Function, t types.Type, pos token.Pos) {
	if a.iface[t] {
		return
	}
	a.iface[t] = true
	if n := namedOf(t); n != nil && n.Obj().Pkg() != nil && a.kind[n.Obj().Pkg()] == analysedPkg && n.TypeParams().Len() == 0 {
		for _, m := range a.methods(n) {
			a.reach(m, edge{fn, pos})
		}
	}
	switch u := t.Underlying().(type) {
	case *types.Pointer:
		a.addType(fn, u.Elem(), pos)
	case *types.Struct:
		for i := range u.NumFields() {
			a.addType(fn, u.Field(i).Type(), pos)
		}
	case *types.Slice:
		a.addType(fn, u.Elem(), pos)
	case *types.Array:
		a.addType(fn, u.Elem(), pos)
	case *types.Map:
		a.addType(fn, u.Key(), pos)
		a.addType(fn, u.Elem(), pos)
	}
}

func isUnsafePointer(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Kind() == types.UnsafePointer
}

// rootGlobal finds the package variable an address is derived from.
func rootGlobal(v ssa.Value) *ssa.Global {
	for {
		switch x := v.(type) {
		case *ssa.Global:
			return x
		case *ssa.FieldAddr:
			v = x.X
		case *ssa.IndexAddr:
			v = x.X
		case *ssa.UnOp:
			if x.Op != token.MUL {
				return nil
			}
			v = x.X
		default:
			return nil
		}
	}
}

func describe(r Rule) string {
	switch r {
	case Clock:
		return "reads the clock"
	case Rand:
		return "draws unseeded randomness"
	case Env:
		return "reads or changes the environment"
	case Host:
		return "depends on the host or changes the process"
	case FS:
		return "reads the file system"
	case Write:
		return "changes the file system"
	case Exec:
		return "starts, signals or ends a process"
	case Net:
		return "uses the network outside the capabilities"
	case Syscall:
		return "makes system calls"
	case Unsafe:
		return "escapes the type system"
	case Reflect:
		return "calls a method found by reflection"
	case Plugin:
		return "loads code at run time"
	case Goroutine:
		return "runs code on another goroutine"
	}
	return string(r)
}

// position is a token position relative to the connector directory, or
// to the module cache for dependencies.
func (a *analyzer) position(pos token.Pos) token.Position {
	if a.prog == nil || !pos.IsValid() {
		return token.Position{}
	}
	return a.prog.Fset.Position(pos)
}

// path is the call path from an entry point to fn: each frame names a
// function and where it calls the next one.
func (a *analyzer) path(fn *ssa.Function) []Frame {
	// chain[k] is called by chain[k+1] at calls[k].
	var chain []*ssa.Function
	var calls []token.Pos
	seen := map[*ssa.Function]bool{}
	for f := fn; f != nil && !seen[f]; f = a.parent[f].from {
		seen[f] = true
		chain = append(chain, f)
		calls = append(calls, a.parent[f].pos)
	}
	n := len(chain)
	frames := make([]Frame, n)
	for i := range frames {
		frames[i].Func = chain[n-1-i].String()
		if j := n - 2 - i; j >= 0 {
			frames[i].Pos = a.position(calls[j])
		}
	}
	return frames
}

// add records a finding once per rule and position.
func (a *analyzer) add(r Rule, pos token.Position, path []Frame, msg string) {
	key := fmt.Sprintf("%s %s:%d:%d", r, pos.Filename, pos.Line, pos.Column)
	if _, ok := a.findings[key]; ok {
		return
	}
	if len(path) > 0 {
		path[len(path)-1].Pos = pos
	}
	a.findings[key] = &Finding{Rule: r, Pos: pos, Message: msg, Path: path}
}

func lessPos(x, y token.Position) bool {
	if x.Filename != y.Filename {
		return x.Filename < y.Filename
	}
	if x.Line != y.Line {
		return x.Line < y.Line
	}
	return x.Column < y.Column
}

// keptValue is a classified value (crypto/rand.Reader, time.Local) that a
// dependency's package initializer only stores into its own package
// variables: a finding only if reachable code reads one of them.
type keptValue struct {
	rule Rule
	pos  token.Position
	path []Frame
	msg  string
	in   []*ssa.Global
}

// keptByDependency returns the package variables of a dependency that
// instr, a load of a classified value in that dependency's package
// initializer, only stores the value into; nil when it is not such a
// load (the connector's own code is always judged where it reads).
func (a *analyzer) keptByDependency(fn *ssa.Function, instr ssa.Instruction) []*ssa.Global {
	if fn.Name() != "init" || fn.Parent() != nil || fn.Pkg == nil {
		return nil // not a package initializer
	}
	pkg := fn.Pkg.Pkg
	if a.own[pkg] || a.kind[pkg] != analysedPkg {
		return nil
	}
	load, ok := instr.(*ssa.UnOp)
	if !ok || load.Op != token.MUL || load.Referrers() == nil {
		return nil
	}
	var into []*ssa.Global
	for _, r := range *load.Referrers() {
		st, ok := r.(*ssa.Store)
		if !ok || st.Val != ssa.Value(load) {
			return nil
		}
		g, ok := st.Addr.(*ssa.Global)
		if !ok || g.Pkg == nil || g.Pkg.Pkg != pkg {
			return nil
		}
		into = append(into, g)
	}
	return into
}

// judgeKept reports each kept value that code reachable from an entry
// point, other than package initializers, reads back.
func (a *analyzer) judgeKept() {
	if len(a.kept) == 0 {
		return
	}
	read := map[*ssa.Global]bool{}
	for fn := range a.seen {
		if fn.Name() == "init" && fn.Parent() == nil {
			continue
		}
		for _, b := range fn.Blocks {
			for _, instr := range b.Instrs {
				for _, op := range instr.Operands(nil) {
					if op != nil && *op != nil {
						if g, ok := (*op).(*ssa.Global); ok {
							read[g] = true
						}
					}
				}
			}
		}
	}
	for _, k := range a.kept {
		if slices.ContainsFunc(k.in, func(g *ssa.Global) bool { return read[g] }) {
			a.add(k.rule, k.pos, k.path, k.msg)
		}
	}
}
