package gen_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/flowir"
	"github.com/flowgen-dev/flowgen/gen"
)

// benchSpec is a connector spec of realistic size: params, a nested input
// with enums, arrays and maps, an output, capabilities, a key, retries and
// a fixture.
func benchSpec(i int) string {
	return fmt.Sprintf(`apiVersion: flowgen.dev/v1
kind: ConnectorSpec
id: bench.c%03d
version: 1.%d.0
provider: bench
summary: Benchmark connector %d.
effects: ReadOnly
determinism: BestEffort
capabilities:
  - {name: http.read}
  - {name: secrets}
params:
  type: object
  properties:
    base_url: {type: string, default: "https://api.bench.example", x-data-class: public}
    page_size: {type: integer, minimum: 1, maximum: 500, default: 50, x-data-class: public}
    mode: {type: string, enum: [fast, safe], default: safe, x-data-class: public}
inputs:
  in: &port
    type: object
    x-data-class: internal
    required: [id, customer, lines, total_cents, currency]
    properties:
      id: {type: string, minLength: 1, pattern: "^[a-z0-9-]+$", x-data-class: public}
      customer:
        type: object
        x-data-class: pii
        required: [id, email]
        properties:
          id: {type: string, x-data-class: pii.customer_id}
          email: {type: string, format: email, x-data-class: pii.email}
          tier: {type: string, enum: [free, pro, enterprise], x-data-class: public}
      lines:
        type: array
        minItems: 1
        x-data-class: internal
        items:
          type: object
          x-data-class: internal
          required: [sku, qty]
          properties:
            sku: {type: string, x-data-class: public}
            qty: {type: integer, minimum: 1, x-data-class: public}
            price_cents: {type: integer, minimum: 0, x-data-class: financial.amount}
      total_cents: {type: integer, minimum: 0, x-data-class: financial.amount}
      currency: {type: string, enum: [EUR, USD, GBP], x-data-class: public}
      placed_at: {type: string, format: date-time, x-data-class: public}
      tags: {type: array, items: {type: string, x-data-class: public}, x-data-class: public}
      attributes: {type: object, additionalProperties: {type: string, x-data-class: internal}, x-data-class: internal}
outputs:
  out: *port
retry:
  owner: orchestrator
  policy: {initialInterval: 200ms, backoffCoefficient: 2, maxInterval: 5s, maxAttempts: 4, nonRetryable: [Auth]}
egress: [api.bench.example]
secrets:
  - {handle: bench/token}
fixtures:
  - name: echo
    input: {id: o-%d, customer: {id: c1, email: a@example.com}, lines: [{sku: S1, qty: 1}], total_cents: 100, currency: EUR}
    output: {id: o-%d, customer: {id: c1, email: a@example.com}, lines: [{sku: S1, qty: 1}], total_cents: 100, currency: EUR}
`, i, i, i, i, i)
}

// benchFlow chains nodes connector nodes over the specs round robin.
func benchFlow(nodes, specs int) string {
	var b strings.Builder
	b.WriteString("apiVersion: flowgen.dev/v1\nkind: Flow\nid: bench.chain\nversion: 1.0.0\nconnectors: [../connectors]\nnodes:\n")
	for i := range nodes {
		fmt.Fprintf(&b, "  - {alias: n%03d, uses: bench.c%03d@^1.0}\n", i, i%specs)
	}
	b.WriteString("edges:\n")
	for i := 1; i < nodes; i++ {
		fmt.Fprintf(&b, "  - {from: n%03d.out, to: n%03d.in}\n", i-1, i)
	}
	return b.String()
}

// BenchmarkGenerate generates 200 connector specs and a 500-node flow
// into a scratch module and reports wall time and allocations, then builds
// the output with go build and reports generation time over build time.
// Each connector gets a stub Connector so that the packages compile.
func BenchmarkGenerate(b *testing.B) {
	const specs, nodes = 200, 500
	repo, _ := filepath.Abs("..")
	mod := b.TempDir()
	write := func(path, data string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write(filepath.Join(mod, "go.mod"), "module bench.example/m\n\ngo 1.26\n\nrequire github.com/flowgen-dev/flowgen v0.0.0\n\nreplace github.com/flowgen-dev/flowgen => "+repo+"\n")
	sum, _ := os.ReadFile(filepath.Join(repo, "go.sum"))
	write(filepath.Join(mod, "go.sum"), string(sum))
	var specPaths []string
	for i := range specs {
		dir := filepath.Join(mod, "connectors", fmt.Sprintf("c%03d", i))
		write(filepath.Join(dir, "connector.yaml"), benchSpec(i))
		write(filepath.Join(dir, "connector.go"), fmt.Sprintf("package c%03d\n\ntype Connector struct{}\n\nfunc (*Connector) Run(_ Context, _ Params, _ Input) (Output, error) { return Output{}, nil }\n", i))
		specPaths = append(specPaths, filepath.Join(dir, "connector.yaml"))
	}
	flowPath := filepath.Join(mod, "flows", "chain.yaml")
	write(flowPath, benchFlow(nodes, specs))
	write(filepath.Join(mod, "flows", "doc.go"), "package flows\n")

	var files []gen.Generated
	var genTime time.Duration
	var allocs, bytes uint64
	b.ResetTimer()
	for range b.N {
		files = files[:0]
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		for _, p := range specPaths {
			s, diags := connectorspec.Load(p)
			if diags.HasErrors() {
				b.Fatal(diags)
			}
			out, diags := gen.Connector(s)
			if diags.HasErrors() {
				b.Fatal(diags)
			}
			files = append(files, out...)
		}
		g, diags := flowir.NewLoader().LoadFlow(flowPath)
		if diags.HasErrors() {
			b.Fatal(diags)
		}
		out, diags := gen.Flow(g)
		if diags.HasErrors() {
			b.Fatal(diags)
		}
		files = append(files, out...)
		genTime += time.Since(start)
		runtime.ReadMemStats(&after)
		allocs += after.Mallocs - before.Mallocs
		bytes += after.TotalAlloc - before.TotalAlloc
	}
	b.StopTimer()
	if _, err := gen.Write(files); err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off")
	tidy := exec.Command("go", "mod", "tidy", "-e")
	tidy.Dir, tidy.Env = mod, env
	tidy.Run()
	start := time.Now()
	build := exec.Command("go", "build", "./...")
	build.Dir, build.Env = mod, env
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build of the generated code: %v\n%s", err, out)
	}
	buildTime := time.Since(start)
	perRun := genTime / time.Duration(b.N)
	b.ReportMetric(float64(perRun.Milliseconds()), "gen-ms")
	b.ReportMetric(float64(allocs)/float64(b.N), "gen-allocs")
	b.ReportMetric(float64(bytes)/float64(b.N)/(1<<20), "gen-MiB")
	b.ReportMetric(float64(len(files)), "files")
	b.ReportMetric(float64(buildTime.Milliseconds()), "build-ms")
	b.ReportMetric(perRun.Seconds()/buildTime.Seconds(), "gen/build")
}
