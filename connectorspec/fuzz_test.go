package connectorspec

import (
	"path/filepath"
	"testing"

	"github.com/flowgen-dev/flowgen/internal/testutil"
)

// FuzzParseSpec feeds arbitrary bytes through parsing, schema compilation
// and every spec check; relative $refs resolve against the examples.
func FuzzParseSpec(f *testing.F) {
	testutil.AddSeedFiles(f, "../examples/connectors/*/connector.yaml", "../testdata/invalid/*/*.yaml")
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
