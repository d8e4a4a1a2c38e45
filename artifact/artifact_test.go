package artifact_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/internal/flowgenmod"
	"github.com/flowgen-dev/flowgen/internal/testutil"
)

const charge = "../examples/connectors/charge"

func build(t *testing.T, dir string) *artifact.Artifact {
	t.Helper()
	a, err := artifact.Build(dir, artifact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestBuildIsDeterministic(t *testing.T) {
	t.Parallel()
	a := build(t, charge)
	b := build(t, charge)
	if a.Manifest.Digest != b.Manifest.Digest || !bytes.Equal(a.Zip, b.Zip) {
		t.Fatalf("two builds differ: %s vs %s", a.Manifest.Digest, b.Manifest.Digest)
	}

	// The same files elsewhere, with other modification times, give the
	// same bytes.
	root := t.TempDir()
	unzipFlowgen(t, root)
	testutil.CopyDir(t, "../examples/connectors", filepath.Join(root, "examples/connectors"))
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error { return os.Chtimes(p, old, old) })
	c := build(t, filepath.Join(root, "examples/connectors/charge"))
	if c.Manifest.Digest != a.Manifest.Digest {
		t.Fatalf("a copy with other mtimes packs to %s, the original to %s", c.Manifest.Digest, a.Manifest.Digest)
	}
	if got := artifact.Digest(a.Zip); got != a.Manifest.Digest {
		t.Fatalf("Digest = %s, manifest says %s", got, a.Manifest.Digest)
	}

	// Any change to a packaged file, even one outside the directory that the
	// spec refers to, changes the digest.
	schema := filepath.Join(root, "examples/connectors/schemas/order.schema.json")
	data, _ := os.ReadFile(schema)
	os.WriteFile(schema, append(data, '\n'), 0o644)
	if d := build(t, filepath.Join(root, "examples/connectors/charge")); d.Manifest.Digest == a.Manifest.Digest {
		t.Fatal("changing a referenced schema file did not change the digest")
	}
}

func TestBuildIsAValidModuleZip(t *testing.T) {
	t.Parallel()
	a := build(t, charge)
	m := a.Manifest
	if m.Module != "flowgen.dev/connectors/payments/charge/v2" || m.Version != "v2.1.0" || m.Connector != "payments.charge" {
		t.Fatalf("identity = %s@%s (%s)", m.Module, m.Version, m.Connector)
	}
	zpath := filepath.Join(t.TempDir(), "a.zip")
	os.WriteFile(zpath, a.Zip, 0o644)
	cf, err := modzip.CheckZip(modVersion(m), zpath)
	if err != nil || cf.Err() != nil {
		t.Fatalf("CheckZip: %v %v", err, cf.Err())
	}
	want := []string{"connector.go", "connector.yaml", "fixtures_gen_test.go", "go.mod", "go.sum", "node_gen.go", "types_gen.go",
		"_flowgen/external/schemas/charge.schema.json", "_flowgen/external/schemas/order.schema.json", "_flowgen/external/schemas/types_gen.go"}
	for _, w := range want {
		if !strings.Contains(strings.Join(cf.Valid, " "), w) {
			t.Errorf("%s is not in the zip; it holds %v", w, cf.Valid)
		}
	}
	gomod := readZip(t, a.Zip, m.Module+"@"+m.Version+"/go.mod")
	flowgen, err := flowgenmod.Build(context.Background(), "..")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"module flowgen.dev/connectors/payments/charge/v2", "go 1.26.0", "github.com/flowgen-dev/flowgen " + flowgen.Version + "\n", "github.com/fxamacker/cbor/v2 v2.10.0 // indirect"} {
		if !strings.Contains(gomod, w) {
			t.Errorf("go.mod lacks %q:\n%s", w, gomod)
		}
	}
	if !strings.Contains(string(m.Spec), `"payments.charge"`) || !strings.Contains(string(m.Spec), "$defs") {
		t.Errorf("manifest spec is not the bundled manifest: %.200s", m.Spec)
	}
}

func TestExtractLoadsBuildsAndTestsAgain(t *testing.T) {
	t.Parallel()
	a := build(t, charge)
	root := t.TempDir()
	dir, err := artifact.Extract(a, root)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "charge"); dir != want {
		t.Fatalf("Extract put the connector in %s, want %s", dir, want)
	}
	if _, diags := connectorspec.Load(filepath.Join(dir, "connector.yaml")); diags.HasErrors() {
		t.Fatalf("the extracted spec does not load:\n%v", diags.Err())
	}
	// Packing what was extracted gives the same artifact: what the registry
	// certifies after an upload is what the publisher packed.
	if again := build(t, dir); again.Manifest.Digest != a.Manifest.Digest {
		t.Fatalf("re-packing the extracted artifact gives %s, the original is %s", again.Manifest.Digest, a.Manifest.Digest)
	}
	// The extracted module builds and passes its fixture tests against this
	// checkout of flowgen, supplied through a workspace.
	repo, _ := filepath.Abs("..")
	gowork := "go 1.26.0\n\nuse ./charge\n\nreplace github.com/flowgen-dev/flowgen => " + repo + "\n"
	os.WriteFile(filepath.Join(root, "go.work"), []byte(gowork), 0o644)
	cmd := exec.Command("go", "test", "-count=1", "-run", "TestFixtures|TestDuplicateDelivery", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOPROXY=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test in the extracted module: %v\n%s", err, out)
	}
}

func TestWriteReadAndTamper(t *testing.T) {
	t.Parallel()
	a := build(t, charge)
	dir := t.TempDir()
	zp, mp, err := artifact.Write(a, dir, "charge")
	if err != nil {
		t.Fatal(err)
	}
	back, err := artifact.Read(zp, mp)
	if err != nil {
		t.Fatal(err)
	}
	if back.Manifest.Digest != a.Manifest.Digest || len(back.Manifest.Files) != len(a.Manifest.Files) {
		t.Fatalf("read back %s with %d files", back.Manifest.Digest, len(back.Manifest.Files))
	}
	bad := bytes.Clone(a.Zip)
	bad[len(bad)/2] ^= 0xff
	os.WriteFile(zp, bad, 0o644)
	if _, err := artifact.Read(zp, mp); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Fatalf("a flipped byte was not caught: %v", err)
	}
	forged := *a
	forged.Manifest.Dir = "../../escape"
	if _, err := artifact.Extract(&forged, t.TempDir()); err == nil {
		t.Fatal("Extract accepted a manifest dir outside the root")
	}
}

func TestBuildRefusesABrokenSpec(t *testing.T) {
	t.Parallel()
	_, err := artifact.Build("../certify/testdata/noidemkey", artifact.Options{})
	if err == nil || !strings.Contains(err.Error(), "connector.yaml:") {
		t.Fatalf("want the spec's diagnostics with file:line, got %v", err)
	}
}

func TestOwnModuleRoot(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	testutil.CopyDir(t, charge, root)
	testutil.CopyDir(t, "../examples/connectors/schemas", filepath.Join(filepath.Dir(root), "schemas"))
	os.WriteFile(filepath.Join(filepath.Dir(root), "schemas", "go.mod"), []byte("module example.com/acme/schemas\n"), 0o644)
	os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/acme/charge/v2\n\ngo 1.26.0\n"), 0o644)
	a := build(t, root)
	if a.Manifest.Module != "example.com/acme/charge/v2" {
		t.Fatalf("module = %s, want go.mod's", a.Manifest.Module)
	}
	if _, err := artifact.Build(root, artifact.Options{Module: "example.com/other"}); err == nil || !strings.Contains(err.Error(), "disagrees") {
		t.Fatalf("a --module that disagrees with go.mod: %v", err)
	}
}

func readZip(t *testing.T, z []byte, name string) string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if f.Name == name {
			rc, _ := f.Open()
			defer rc.Close()
			var b bytes.Buffer
			b.ReadFrom(rc)
			return b.String()
		}
	}
	t.Fatalf("%s not in zip", name)
	return ""
}

func modVersion(m artifact.Manifest) module.Version {
	return module.Version{Path: m.Module, Version: m.Version}
}

// unzipFlowgen lays out the flowgen module's package files under root, as
// a checkout without tests would have them.
func unzipFlowgen(t *testing.T, root string) {
	t.Helper()
	m, err := flowgenmod.Build(context.Background(), "..")
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(m.Zip), int64(len(m.Zip)))
	if err != nil {
		t.Fatal(err)
	}
	prefix := flowgenmod.Path + "@" + m.Version + "/"
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(f.Name, prefix)))
		os.MkdirAll(filepath.Dir(target), 0o755)
		if err := os.WriteFile(target, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBuildRefusesWhatChangesTheBuild: a connector directory holding a
// go.work, a vendor directory, or a go.mod with toolchain, replace or
// godebug lines does not package, and the error names each file and line.
func TestBuildRefusesWhatChangesTheBuild(t *testing.T) {
	for name, c := range map[string]struct {
		files map[string]string
		says  []string
	}{
		"workspace": {map[string]string{"go.work": "go 1.26\n\nuse .\n"}, []string{"go.work: a workspace file"}},
		"vendor":    {map[string]string{"vendor/modules.txt": "# x\n"}, []string{"vendor/modules.txt"}},
		"go.mod directives": {map[string]string{"go.mod": "module example.com/c\n\ngo 1.26\n\ntoolchain go1.26.1\n\ngodebug x509sha1=1\n\nreplace example.com/x => ../x\n"},
			[]string{"go.mod:5: toolchain go1.26.1", "go.mod:7: godebug x509sha1=1", "go.mod:9: replace example.com/x"}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(rel, data string) {
				p := filepath.Join(dir, filepath.FromSlash(rel))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("connector.yaml", "apiVersion: flowgen.dev/v1\nkind: ConnectorSpec\nid: demo.echo\nversion: 1.0.0\nprovider: demo\nsummary: Echo.\neffects: Pure\ndeterminism: Strict\ncache: {key: [text]}\n"+
				"inputs:\n  in: {type: object, x-data-class: public, properties: {text: {type: string, x-data-class: public}}}\n"+
				"outputs:\n  out: {type: object, x-data-class: public, properties: {text: {type: string, x-data-class: public}}}\n")
			write("go.mod", "module example.com/c\n\ngo 1.26\n")
			for rel, data := range c.files {
				write(rel, data)
			}
			_, err := artifact.Build(dir, artifact.Options{})
			if !errors.Is(err, artifact.ErrChangesBuild) {
				t.Fatalf("Build: %v, want ErrChangesBuild", err)
			}
			for _, want := range c.says {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q:\n%v", want, err)
				}
			}
		})
	}
}
