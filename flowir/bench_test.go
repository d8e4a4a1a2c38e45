package flowir

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// benchFlow writes a flow of n bench.step nodes and 2n-3 edges: node i is fed
// by nodes i-1 and i-2, so every node but the first two merges two inputs.
func benchFlow(tb testing.TB, n int) []byte {
	tb.Helper()
	specs, err := filepath.Abs("testdata/bench")
	if err != nil {
		tb.Fatal(err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "apiVersion: flowgen.dev/v1\nkind: Flow\nid: bench.chain\nversion: 1.0.0\nconnectors: [%q]\nnodes:\n", filepath.ToSlash(specs))
	for i := range n {
		fmt.Fprintf(&b, "  - {alias: s%d, uses: bench.step@^1}\n", i)
	}
	b.WriteString("edges:\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  - {from: s%d.out, to: s%d.in}\n", i-1, i)
		if i >= 2 {
			fmt.Fprintf(&b, "  - {from: s%d.out, to: s%d.in}\n", i-2, i)
		}
	}
	return b.Bytes()
}

// TestBenchFlowIsClean keeps the benchmark honest: the generated flow must
// validate without diagnostics and have the advertised size.
func TestBenchFlowIsClean(t *testing.T) {
	t.Parallel()
	g, diags := NewLoader().CheckFlow("bench.yaml", benchFlow(t, 50))
	if len(diags) > 0 {
		t.Fatalf("bench flow has diagnostics:\n%v", diags)
	}
	if len(g.Nodes) != 50 || len(g.Edges) != 2*50-3 {
		t.Fatalf("got %d nodes, %d edges", len(g.Nodes), len(g.Edges))
	}
}

// validateOnce loads and checks a flow with a fresh loader (so the one spec
// is parsed each time, as in a real run) and returns how long it took.
func validateOnce(b *testing.B, data []byte) time.Duration {
	start := time.Now()
	_, diags := NewLoader().CheckFlow("bench.yaml", data)
	d := time.Since(start)
	if len(diags) > 0 {
		b.Fatalf("diagnostics: %v", diags)
	}
	return d
}

// BenchmarkValidateFlow reports the time to parse, resolve and check a flow
// of 1,000 nodes and 2,000 edges.
func BenchmarkValidateFlow(b *testing.B) {
	data := benchFlow(b, 1000)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		validateOnce(b, data)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/node")
}

// BenchmarkValidateScaling validates flows of 1k and 10k nodes side by side
// in the same run and reports their per-node cost and the ratio between
// them: 1.0 is perfectly linear, 10 would be quadratic.
func BenchmarkValidateScaling(b *testing.B) {
	small, large := benchFlow(b, 1000), benchFlow(b, 10000)
	var tSmall, tLarge time.Duration
	for b.Loop() {
		tSmall += validateOnce(b, small)
		tLarge += validateOnce(b, large)
	}
	perSmall := float64(tSmall.Nanoseconds()) / float64(b.N) / 1000
	perLarge := float64(tLarge.Nanoseconds()) / float64(b.N) / 10000
	b.ReportMetric(perSmall, "ns/node@1k")
	b.ReportMetric(perLarge, "ns/node@10k")
	b.ReportMetric(perLarge/perSmall, "10k/1k-per-node")
}
