package flowir

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/flowgen-dev/flowgen/internal/testutil"
)

// FuzzParseFlow feeds arbitrary bytes through parsing, resolution and every
// validation pass. The connector catalogue is the examples'; inputs that
// would make the loader read outside the examples are parsed only.
func FuzzParseFlow(f *testing.F) {
	testutil.AddSeedFiles(f, "../examples/flows/*.yaml", "../testdata/invalid/*/flow.yaml")
	f.Add([]byte(`{"apiVersion":"flowgen.dev/v1","kind":"Flow","id":"a.b","nodes":[{"alias":"x","uses":"orders.normalize"}],"edges":[{"from":"x.out","to":"x.in"}]}`))
	subflows, _ := filepath.Glob("../examples/flows/*.yaml")
	l := NewLoader()
	path := filepath.Join("..", "examples", "flows", "fuzz-input.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, diags := ParseFlow(path, data)
		if fl == nil {
			if !diags.HasErrors() {
				t.Fatal("no flow and no error")
			}
			return
		}
		for _, c := range fl.Connectors {
			if c != "../connectors" {
				return
			}
		}
		for _, n := range fl.Nodes {
			if n != nil && (n.Spec != "" || n.Subflow != nil && !slices.Contains(subflows, filepath.Join("../examples/flows", n.Subflow.Flow))) {
				return
			}
		}
		g, _ := l.CheckFlow(path, data)
		if g == nil {
			t.Fatal("flow parsed once but not twice")
		}
	})
}
