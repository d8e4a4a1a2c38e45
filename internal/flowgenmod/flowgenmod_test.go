package flowgenmod

import (
	"archive/zip"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildIsTheCheckoutsContent: the version depends on the content
// alone, the zip holds the packages' files and no tests, and Used finds
// the same module from a connector inside it.
func TestBuildIsTheCheckoutsContent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, err := Build(ctx, "../..")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.Version, pseudoPrefix) || len(m.Version) != len(pseudoPrefix)+12 {
		t.Fatalf("version %s", m.Version)
	}
	zr, err := zip.NewReader(bytes.NewReader(m.Zip), int64(len(m.Zip)))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range zr.File {
		names[strings.TrimPrefix(f.Name, Path+"@"+m.Version+"/")] = true
	}
	for _, want := range []string{"go.mod", "go.sum", "runtime/engine/engine.go", "examples/connectors/charge/node_gen.go", "schemas/connectorspec.schema.json"} {
		if !names[want] {
			t.Errorf("%s missing from the zip", want)
		}
	}
	for name := range names {
		if strings.HasSuffix(name, "_test.go") || strings.Contains(name, "/testdata/") {
			t.Errorf("%s is in the zip", name)
		}
	}
	dir, version, err := Used(ctx, "../../examples/connectors/charge")
	if err != nil || version != m.Version || dir != m.Dir {
		t.Fatalf("used: %s %s %v, want %s %s", dir, version, err, m.Dir, m.Version)
	}

	// A copy of the packages gives the same version; a changed file another.
	copyDir := t.TempDir()
	for name := range names {
		data, err := os.ReadFile(filepath.Join("../..", name))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(copyDir, filepath.Dir(name)), 0o755)
		os.WriteFile(filepath.Join(copyDir, name), data, 0o644)
	}
	same, err := Build(ctx, copyDir)
	if err != nil || same.Version != m.Version {
		t.Fatalf("copy: %v %v, want %s", same, err, m.Version)
	}
	os.WriteFile(filepath.Join(copyDir, "runtime", "extra.go"), []byte("package runtime\n"), 0o644)
	delete(cache, copyDir)
	changed, err := Build(ctx, copyDir)
	if err != nil || changed.Version == m.Version {
		t.Fatalf("changed: %v %v", changed, err)
	}
}
