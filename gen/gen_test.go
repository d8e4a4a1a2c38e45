package gen_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/flowir"
	"github.com/flowgen-dev/flowgen/gen"
	"github.com/flowgen-dev/flowgen/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the generated files under testdata/")

// cases lists the golden cases: directories under testdata holding a
// connector.yaml, a hand-written connector.go and the generated files.
func cases(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob("testdata/*/connector.yaml")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
	}
	return dirs
}

func generate(t *testing.T, dir string) []gen.Generated {
	t.Helper()
	s, diags := connectorspec.Load(filepath.Join(dir, "connector.yaml"))
	if diags.HasErrors() {
		t.Fatalf("%s: %v", dir, diags)
	}
	files, diags := gen.Connector(s)
	if diags.HasErrors() {
		t.Fatalf("%s: %v", dir, diags)
	}
	return files
}

// TestGolden compares generated code with the files checked in under
// testdata; go test ./gen -update rewrites them.
func TestGolden(t *testing.T) {
	for _, dir := range cases(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			files := generate(t, dir)
			if *update {
				if _, err := gen.Write(files); err != nil {
					t.Fatal(err)
				}
				return
			}
			compareGolden(t, files)
		})
	}
}

// TestGoldenFlows does the same for the flows under testdata/flows.
func TestGoldenFlows(t *testing.T) {
	for _, f := range flowCases(t) {
		files := generateFlow(t, f)
		if *update {
			if _, err := gen.Write(files); err != nil {
				t.Fatal(err)
			}
			continue
		}
		compareGolden(t, files)
	}
}

// compareGolden checks generated files against the ones on disk.
func compareGolden(t *testing.T, files []gen.Generated) {
	t.Helper()
	for _, f := range files {
		want, err := os.ReadFile(f.Path)
		if f.Data == nil {
			if err == nil {
				t.Errorf("%s should not exist (its spec has no fixtures)", f.Path)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v; run go test ./gen -update", f.Path, err)
		} else if !bytes.Equal(f.Data, want) {
			t.Errorf("%s differs from the generator's output; run go test ./gen -update and review the diff:\n%s",
				f.Path, testutil.Diff(f.Path, want, "generated", f.Data))
		}
		if !bytes.HasPrefix(f.Data, []byte("// "+gen.Header+"\n")) {
			t.Errorf("%s does not start with the generated-code header", f.Path)
		}
	}
}

func flowCases(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/flows/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden flows: %v", err)
	}
	return files
}

func generateFlow(t *testing.T, path string) []gen.Generated {
	t.Helper()
	g, diags := flowir.NewLoader().LoadFlow(path)
	if diags.HasErrors() {
		t.Fatalf("%s: %v", path, diags)
	}
	files, diags := gen.Flow(g)
	if diags.HasErrors() {
		t.Fatalf("%s: %v", path, diags)
	}
	return files
}

// TestDeterministic generates each case many times: map iteration order
// changes between runs in Go, so any dependence on it shows up as a diff.
func TestDeterministic(t *testing.T) {
	gens := map[string]func() []gen.Generated{}
	for _, dir := range cases(t) {
		gens[dir] = func() []gen.Generated { return generate(t, dir) }
	}
	for _, f := range flowCases(t) {
		gens[f] = func() []gen.Generated { return generateFlow(t, f) }
	}
	for _, generate := range gens {
		first := generate()
		for range 20 {
			again := generate()
			for i := range first {
				if !bytes.Equal(first[i].Data, again[i].Data) {
					t.Fatalf("%s: output changed between runs", first[i].Path)
				}
			}
		}
	}
}

// TestGeneratedPackagesPass vets the golden packages and runs their own
// tests, which exercise decoding, validation, keys and NewNode.
func TestGeneratedPackagesPass(t *testing.T) {
	if testing.Short() {
		t.Skip("builds packages with the go command")
	}
	var pkgs []string
	for _, dir := range cases(t) {
		pkgs = append(pkgs, "./"+filepath.ToSlash(dir))
	}
	pkgs = append(pkgs, "./testdata/flows")
	for _, args := range [][]string{append([]string{"vet"}, pkgs...), append([]string{"test", "-count=1"}, pkgs...)} {
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			t.Errorf("go %s: %v\n%s", args[0], err, out)
		}
	}
}

// TestUndeclaredCapabilityDoesNotCompile replaces a golden case's
// hand-written file with one that uses capabilities its spec does not
// declare, and checks that go build rejects it naming each method.
func TestUndeclaredCapabilityDoesNotCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds packages with the go command")
	}
	for _, tc := range []struct {
		dir, body string
		want      []string
	}{
		{"testdata/pure", `package pure

func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	_ = ctx.Now()
	_, _ = ctx.Get("https://example.com", nil)
	return Output{Slug: in.Title}, nil
}

type Connector struct{}
`, []string{"ctx.Now undefined", "ctx.Get undefined"}},
		{"testdata/features", `package features

func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	_, _ = ctx.WriteBlob("x", nil), ctx.Uint64()
	return Output{RequestID: in.RequestID}, nil
}

type Connector struct{}
`, []string{"ctx.WriteBlob undefined", "ctx.Uint64 undefined"}},
		{"testdata/pure", `package pure

type Connector struct{}
`, []string{"Connector does not implement Implementation (missing method Run)"}},
	} {
		abs, err := filepath.Abs(filepath.Join(tc.dir, "connector.go"))
		if err != nil {
			t.Fatal(err)
		}
		replacement := filepath.Join(t.TempDir(), "connector.go")
		overlay := filepath.Join(t.TempDir(), "overlay.json")
		if err := os.WriteFile(replacement, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		js, _ := json.Marshal(map[string]any{"Replace": map[string]string{abs: replacement}})
		if err := os.WriteFile(overlay, js, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("go", "build", "-overlay", overlay, "./"+tc.dir).CombinedOutput()
		if err == nil {
			t.Errorf("%s: a connector using undeclared capabilities compiled", tc.dir)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s: build output does not mention %q:\n%s", tc.dir, w, out)
			}
		}
	}
}

// TestTypedWiringRejectsHandEditedEdges removes the Reshape the generator
// put on an edge between different Go types: the flow no longer compiles.
func TestTypedWiringRejectsHandEditedEdges(t *testing.T) {
	if testing.Short() {
		t.Skip("builds packages with the go command")
	}
	src := "../examples/flows/order_fulfilment_gen.go"
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), "runtime.Reshape[upsertorder.Output, slackpost.Input](saveNode.Out(\"out\"))", "saveNode.Out(\"out\")", 1)
	if edited == string(data) {
		t.Fatal("the generated flow has no Reshape on save -> notify any more; update this test")
	}
	abs, _ := filepath.Abs(src)
	replacement := filepath.Join(t.TempDir(), "flow.go")
	overlay := filepath.Join(t.TempDir(), "overlay.json")
	os.WriteFile(replacement, []byte(edited), 0o644)
	js, _ := json.Marshal(map[string]any{"Replace": map[string]string{abs: replacement}})
	os.WriteFile(overlay, js, 0o644)
	out, err := exec.Command("go", "build", "-overlay", overlay, "../examples/flows").CombinedOutput()
	if err == nil {
		t.Fatal("an edge between upsertorder.Output and slackpost.Input compiled without Reshape")
	}
	if !strings.Contains(string(out), "In[slackpost.Input] of notifyNode.In() does not match") {
		t.Errorf("build error does not name the edge's types:\n%s", out)
	}
}

// TestInlineNodeDiagnostics: inline nodes are checked against the flow's
// Go package with go/packages, each problem positioned in the flow file.
func TestInlineNodeDiagnostics(t *testing.T) {
	g, diags := flowir.NewLoader().LoadFlow("testdata/inlinebad/flow.yaml")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	files, diags := gen.Flow(g)
	if files != nil {
		t.Error("files generated for a flow with errors")
	}
	var got []string
	for _, d := range diags {
		got = append(got, fmt.Sprintf("%d:%d %s %s", d.Pos.Line, d.Pos.Col, d.Code, d.Message))
	}
	want := []string{
		"10:11 GEN001 go:Missing: package inlinebad has no function Missing",
		"12:11 GEN001 go:WrongSignature (funcs.go:6) has signature func(s string) string, which a node cannot call",
		"18:12 GEN001 edge slug.out -> other joins Go types github.com/flowgen-dev/flowgen/gen/testdata/pure.Output and int",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSharedSchemasNeedTheirOwnDirectory: a connector that refers to a
// schema file beside another connector gets GEN001, not two generators
// writing the same types_gen.go.
func TestSharedSchemasNeedTheirOwnDirectory(t *testing.T) {
	dir := t.TempDir()
	spec := func(id, ref string) string {
		return "apiVersion: flowgen.dev/v1\nkind: ConnectorSpec\nid: " + id + "\nversion: 1.0.0\nprovider: flowgen\nsummary: S.\n" +
			"effects: Pure\ndeterminism: BestEffort\ninputs:\n  in: {$ref: " + ref + "}\noutputs:\n  out: {$ref: " + ref + "}\n"
	}
	files := map[string]string{
		"go.mod":              "module example.com/s\n\ngo 1.26\n",
		"b/thing.schema.json": `{"type": "object", "x-data-class": "public", "properties": {"id": {"type": "string", "x-data-class": "public"}}}`,
		"b/connector.yaml":    spec("demo.b", "thing.schema.json"),
		"a/connector.yaml":    spec("demo.a", "../b/thing.schema.json"),
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(data), 0o644)
	}
	s, diags := connectorspec.Load(filepath.Join(dir, "a", "connector.yaml"))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	got := gen.Check(s)
	if !got.HasErrors() || got[0].Code != "GEN001" || !strings.Contains(got[0].Message, "need a directory of their own") || !strings.Contains(got[0].Fix, "schemas/") {
		t.Fatalf("diagnostics: %v", got)
	}
}

// TestGoldenFlowProgram renders the program flowgen run builds for the
// golden flows, from two packages (the second import of the same package
// name gets its own alias), against testdata/program.go.golden.
func TestGoldenFlowProgram(t *testing.T) {
	var flows []*flowir.Graph
	for _, path := range flowCases(t) {
		g, diags := flowir.NewLoader().LoadFlow(path)
		if diags.HasErrors() {
			t.Fatalf("%s: %v", path, diags)
		}
		flows = append(flows, g)
	}
	src, err := gen.FlowProgram("Main", []gen.ProgramPackage{
		{ImportPath: "github.com/flowgen-dev/flowgen/gen/testdata/flows", Flows: flows},
		{ImportPath: "example.com/other/flows", Flows: flows[:1]},
	})
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/program.go.golden"
	if *update {
		if err := os.WriteFile(golden, src, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v; run go test ./gen -update", err)
	}
	if !bytes.Equal(src, want) {
		t.Errorf("%s differs from FlowProgram's output; run go test ./gen -update and review the diff:\n%s", golden, testutil.Diff(golden, want, "generated", src))
	}
}
