package connectorspec

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseSpec feeds arbitrary bytes through parsing, schema compilation
// and every spec check; relative $refs resolve against the examples.
func FuzzParseSpec(f *testing.F) {
	for _, glob := range []string{"../examples/connectors/*/connector.yaml", "../testdata/invalid/*/*.yaml"} {
		paths, _ := filepath.Glob(glob)
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	path := filepath.Join("..", "examples", "connectors", "charge", "fuzz-input.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		s, diags := Parse(path, data)
		if s == nil && !diags.HasErrors() {
			t.Fatal("no spec and no error")
		}
		for _, d := range diags {
			if d.Message == "" || d.Code == "" {
				t.Fatalf("diagnostic without code or message: %+v", d)
			}
		}
	})
}
