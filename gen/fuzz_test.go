package gen_test

import (
	"bytes"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/gen"
	"github.com/flowgen-dev/flowgen/internal/testutil"
)

// FuzzGenerate feeds arbitrary specs through the generator: it must not
// panic, must report problems as diagnostics, and whatever it generates
// must parse as Go and be the same bytes twice.
func FuzzGenerate(f *testing.F) {
	testutil.AddSeedFiles(f, "testdata/*/connector.yaml", "../examples/connectors/*/connector.yaml")
	path := filepath.Join("testdata", "features", "fuzz-input.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		s, diags := connectorspec.Parse(path, data)
		if s == nil || diags.HasErrors() {
			return
		}
		if check := gen.Check(s); check.HasErrors() {
			return
		}
		files, diags := gen.Connector(s)
		if diags.HasErrors() {
			for _, d := range diags {
				if d.Message == "" || d.Code == "" {
					t.Fatalf("diagnostic without code or message: %+v", d)
				}
			}
			return
		}
		again, _ := gen.Connector(s)
		for i, g := range files {
			if g.Data == nil {
				continue
			}
			if _, err := parser.ParseFile(token.NewFileSet(), g.Path, g.Data, parser.AllErrors); err != nil {
				t.Fatalf("%s does not parse: %v\n%s", g.Path, err, g.Data)
			}
			if !bytes.Equal(g.Data, again[i].Data) {
				t.Fatalf("%s differs between two runs", g.Path)
			}
		}
	})
}
