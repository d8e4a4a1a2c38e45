package layers

import (
	"context"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/internal/golist"
)

const module = "github.com/flowgen-dev/flowgen/"

// pkg is what go list says of one package: its path and every package it
// depends on.
type pkg struct {
	ImportPath string
	Deps       []string
}

func (p pkg) rel() string { return strings.TrimPrefix(p.ImportPath, module) }

// nonStandardDeps counts p's transitive non-test dependencies outside the
// standard library (whose paths have no dot in their first element).
func (p pkg) nonStandardDeps() int {
	n := 0
	for _, d := range p.Deps {
		if first, _, _ := strings.Cut(d, "/"); strings.Contains(first, ".") {
			n++
		}
	}
	return n
}

// flowgenDeps are p's transitive non-test dependencies inside the module,
// relative to it.
func (p pkg) flowgenDeps() []string {
	var out []string
	for _, d := range p.Deps {
		if r, ok := strings.CutPrefix(d, module); ok {
			out = append(out, r)
		}
	}
	return out
}

func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := golist.Packages[pkg](context.Background(), root, nil, "-deps", "./...")
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]pkg{}
	for _, p := range pkgs {
		all[p.ImportPath] = p
	}
	return all
}

func under(rel, tree string) bool { return rel == tree || strings.HasPrefix(rel, tree+"/") }

// TestLayers keeps the arrows of the module pointing one way:
//   - package runtime, the node API every connector links (and the only
//     package of flowgen generated code imports), is a leaf: it reaches
//     only the vocabulary (runtype, flowtype), never the engine, a store or
//     an observability library, so that a connector builds for wasip1;
//   - the two sides of a confined connector, the guest linked into its
//     module and the host that runs it, share only the ABI (wasmabi) and
//     the node API, never the engine;
//   - the runtime's other packages never reach the generator, the
//     registry, certification, the artifact format, the test harness or
//     the serve tree (console, job API, local runner), which uses them;
//   - the formats and identity packages are leaves: they reach only each
//     other and the strict YAML reader; runtype, the runtime's vocabulary,
//     reaches only flowtype;
//   - the engine (runtime/internal/engine) reaches only the vocabulary,
//     the store seam, the ledgers and the observability interfaces
//     (runtime/observe): it sees node code only through its Task
//     interface, never the node API of package runtime;
//   - the step protocol (runtime/internal/protocol: the key layout and
//     the store's format version) reaches only the vocabulary, the
//     ledgers and the store seam; maintenance (the retention sweeper)
//     reaches the protocol, never the engine;
//   - no package of the runtime links Prometheus or OpenTelemetry: their
//     adapters (telemetry/) are linked by the programs that want them;
//   - the registry client reaches only the registry's wire types (and the
//     Retry-After reader, a leaf), and stays small;
//   - the artifact format does not link the code generator.
func TestLayers(t *testing.T) {
	all := listPackages(t)
	forbidden := func(p pkg, trees ...string) {
		for _, d := range p.flowgenDeps() {
			for _, tree := range trees {
				if under(d, tree) {
					t.Errorf("%s depends on %s; it must not reach %s", p.rel(), d, tree)
				}
			}
		}
	}
	only := func(p pkg, allowed ...string) {
		for _, d := range p.flowgenDeps() {
			if !slices.ContainsFunc(allowed, func(a string) bool { return under(d, a) }) {
				t.Errorf("%s depends on %s; it may reach only %v", p.rel(), d, allowed)
			}
		}
	}
	leaves := []string{"flowtype", "diag", "runtime/idemkey", "runtime/ledger", "registry/api", "internal/crashpoint", "internal/addrclass", "internal/retryafter"}
	formats := append([]string{"connectorspec", "flowir", "internal/strictyaml", "runtime/runtype"}, leaves...)
	seen := 0
	for _, p := range all {
		rel, ok := strings.CutPrefix(p.ImportPath, module)
		if !ok {
			continue
		}
		seen++
		switch {
		case slices.Contains(leaves, rel):
			only(p)
		case rel == "runtime/runtype":
			only(p, "flowtype")
		case rel == "runtime":
			only(p, "runtime/runtype", "flowtype")
		case rel == "runtime/wasmabi":
			only(p, "runtime", "runtime/runtype", "flowtype")
		case rel == "runtime/wasmguest", rel == "runtime/wasmhost":
			only(p, "runtime", "runtime/runtype", "runtime/wasmabi", "flowtype")
		case rel == "runtime/internal/engine":
			only(p, "flowtype", "runtime/runtype", "runtime/idemkey", "runtime/ledger", "runtime/store", "runtime/observe", "runtime/internal/protocol", "runtime/internal/maintenance")
		case rel == "runtime/internal/maintenance":
			only(p, "flowtype", "runtime/runtype", "runtime/ledger", "runtime/store", "runtime/observe", "runtime/internal/protocol")
		case rel == "runtime/internal/protocol":
			only(p, "flowtype", "runtime/runtype", "runtime/ledger", "runtime/store")
		case rel == "runtime/observe":
			only(p, "flowtype", "runtime/runtype")
		case slices.Contains(formats, rel):
			only(p, formats...)
		case under(rel, "runtime"):
			forbidden(p, "gen", "registry", "certify", "artifact", "connectorvet", "sbom", "signing", "policy", "testharness", "cmd", "examples", "serve", "telemetry")
			// Prometheus and OpenTelemetry are adapters' business
			// (telemetry/): the runtime tells observe.Metrics and
			// observe.Tracer. 188 packages outside the standard library
			// under runtime/ before, 115 after.
			for _, d := range p.Deps {
				if strings.HasPrefix(d, "github.com/prometheus/") || strings.HasPrefix(d, "go.opentelemetry.io/") {
					t.Errorf("%s depends on %s; the runtime reaches metrics and traces only through runtime/observe", rel, d)
					break
				}
			}
		case rel == "registry/client":
			only(p, "registry/api", "internal/retryafter")
			const limit = 200 // 471 before registry/api; 189 after
			if n := len(p.Deps); n > limit {
				t.Errorf("registry/client links %d packages, over its limit of %d", n, limit)
			}
		case rel == "artifact":
			forbidden(p, "gen", "registry", "certify", "runtime")
		case rel == "pull", rel == "policy", rel == "certify/report":
			// What reads signed evidence links neither the certifier nor
			// a signer: 268 packages outside the standard library before
			// certify/report and the standard-library verifier, 57 after.
			only(p, "certify/report", "signing", "artifact", "connectorspec", "diag", "flowtype", "internal", "policy", "registry/api", "registry/client")
			forbidden(p, "signing/signer")
			const limit = 60
			if n := p.nonStandardDeps(); n > limit {
				t.Errorf("%s links %d packages outside the standard library, over its limit of %d", rel, n, limit)
			}
		}
	}
	if seen < 40 {
		t.Fatalf("go list found only %d packages of the module", seen)
	}
}

// TestGeneratedImports checks that generated code imports only the
// standard library and package runtime (generated tests also the test
// harness), over every generated file in the repository: what a connector
// links is the node API and nothing else of flowgen, and no third-party
// module at all.
func TestGeneratedImports(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "invalid") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || !strings.Contains(d.Name(), "_gen") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil || len(f.Comments) == 0 || !strings.HasPrefix(f.Comments[0].Text(), "Code generated by flowgen.") {
			return nil
		}
		files++
		test := strings.HasSuffix(path, "_test.go")
		rel, _ := filepath.Rel(root, path)
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			r, ok := strings.CutPrefix(p, module)
			switch {
			case !ok && !strings.Contains(strings.Split(p, "/")[0], "."):
				// the standard library
			case !ok:
				t.Errorf("%s imports %s; generated code imports no third-party module", rel, p)
			case r == "runtime" || isOwnTree(rel, r) || test && under(r, "testharness"):
			default:
				t.Errorf("%s imports %s; generated code may import only package runtime (tests also the test harness)", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("found only %d generated files", files)
	}
}

// isOwnTree reports whether import r (relative to the module) is a package
// of the same example or golden tree as the file: generated flows import
// the connectors they wire, shared schema packages their neighbours.
func isOwnTree(file, r string) bool {
	for _, tree := range []string{"examples/", "gen/testdata/", "certify/testdata/", "cmd/registryd/testdata/"} {
		if strings.HasPrefix(filepath.ToSlash(file), tree) && strings.HasPrefix(r, tree) {
			return true
		}
	}
	return false
}

// maxConnectorLinks bounds the non-standard packages an example connector
// links, itself included: the node API, its vocabulary and the connector's
// own generated schema packages, and nothing that would make a confined
// module large or slow to start.
const maxConnectorLinks = 15

// TestConnectorsLinkLittle checks what each example connector links, for
// the host and for wasip1 (the confined module): at most maxConnectorLinks
// non-standard packages, and none of the engine, the stores or an
// observability, YAML or database driver library.
func TestConnectorsLinkLittle(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	banned := []string{module + "runtime/internal", module + "runtime/store", module + "runtime/engine",
		"github.com/prometheus/", "go.opentelemetry.io/", "github.com/goccy/go-yaml", "go.etcd.io/bbolt", "github.com/lib/pq"}
	for _, env := range [][]string{nil, {"GOOS=wasip1", "GOARCH=wasm"}} {
		pkgs, err := golist.Packages[pkg](context.Background(), root, env, "-deps=false", "./examples/connectors/...")
		if err != nil {
			t.Fatal(err)
		}
		if len(pkgs) < 5 {
			t.Fatalf("go list found only %d example connectors", len(pkgs))
		}
		for _, p := range pkgs {
			var links []string
			for _, d := range append(p.Deps, p.ImportPath) {
				if first := strings.Split(d, "/")[0]; strings.Contains(first, ".") {
					links = append(links, d)
				}
				for _, b := range banned {
					if strings.HasPrefix(d, b) {
						t.Errorf("%s %v links %s", p.ImportPath, env, d)
					}
				}
			}
			if len(links) > maxConnectorLinks {
				t.Errorf("%s %v links %d non-standard packages, over %d: %v", p.ImportPath, env, len(links), maxConnectorLinks, links)
			}
		}
	}
}
