package certify

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/artifact"
)

// TestWorkspaceGoVersion: the workspace declares the artifact's go
// version when this toolchain has it, and an artifact that needs a newer
// Go is refused, naming both versions, before anything is built.
func TestWorkspaceGoVersion(t *testing.T) {
	for _, c := range []struct {
		goLine, want string
		tooOld       bool
	}{
		{"go 1.26.0", "go 1.26.0\n", false},
		{"go 1.25", "go 1.26.0\n", false}, // never below 1.26.0
		{"go 1.26.1", "go 1.26.1\n", false},
		{"go 1.99.0", "", true},
	} {
		src := t.TempDir()
		spec, err := os.ReadFile("../examples/connectors/normalize/connector.yaml")
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(src, "connector.yaml"), []byte(strings.ReplaceAll(string(spec), "$ref: ../schemas/order.schema.json", "type: object")), 0o644)
		os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.com/normalize\n\n"+c.goLine+"\n"), 0o644)
		a, err := artifact.Build(src, artifact.Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.goLine, err)
		}
		root := t.TempDir()
		_, err = Workspace(a, root, "/flowgen")
		if c.tooOld {
			if !errors.Is(err, ErrToolchainTooOld) || !strings.Contains(err.Error(), "go 1.99.0") || !strings.Contains(err.Error(), "go1.") {
				t.Errorf("%s: %v, want a refusal naming both versions", c.goLine, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.goLine, err)
		}
		work, _ := os.ReadFile(filepath.Join(root, "go.work"))
		if !strings.HasPrefix(string(work), c.want) || !strings.Contains(string(work), "replace github.com/flowgen-dev/flowgen => /flowgen") {
			t.Errorf("%s: go.work is\n%s", c.goLine, work)
		}
	}
}
