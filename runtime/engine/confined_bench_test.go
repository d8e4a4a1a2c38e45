package engine

import (
	"context"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/gen"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine/testdata/pass"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost"
	"github.com/flowgen-dev/flowgen/wasmbuild"
)

// The confinement benchmarks run one connector, testdata/pass (Pure: it
// returns its input), in the same 3-node linear flow twice: natively, its
// generated node in the engine's process, and confined, its module in the
// engine's wasm host. Both sides make the same things durable (every
// activation's result committed, fsync on), run the same workers and
// decode, validate and encode the same JSON; the only difference is
// where the connector's code runs.

// passModule is the pass connector's module, built once per benchmark
// binary into a directory that outlives the benchmarks using it.
var passModule struct {
	once     sync.Once
	confined runtime.Confined
	dir      string
	cache    string
	err      error
}

// confinedPass returns the pass connector's runtime.Confined (its path
// relative to ModuleDir) and the options that find and cache its module.
func confinedPass(b *testing.B) (runtime.Confined, Options) {
	b.Helper()
	passModule.once.Do(func() {
		spec, diags := connectorspec.Load("testdata/pass/connector.yaml")
		if spec == nil {
			passModule.err = diags.Err()
			return
		}
		decl, err := gen.Declare(spec)
		if err != nil {
			passModule.err = err
			return
		}
		if passModule.dir, err = os.MkdirTemp("", "flowgen-bench-modules-"); err != nil {
			passModule.err = err
			return
		}
		passModule.cache = filepath.Join(passModule.dir, "cache")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		mod, err := wasmbuild.Build(ctx, "testdata/pass", nil, filepath.Join(passModule.dir, "pass.wasm"))
		if err != nil {
			passModule.err = err
			return
		}
		passModule.confined = runtime.Confined{Declaration: decl, Digest: mod.Digest, Path: "pass.wasm"}
	})
	if passModule.err != nil {
		b.Fatalf("building testdata/pass: %v", passModule.err)
	}
	return passModule.confined, Options{ModuleDir: passModule.dir, ModuleCache: passModule.cache}
}

// passFlow is the 3-node linear flow of pass nodes: native, or confined.
func passFlow(b *testing.B, confined bool) (*runtime.Flow, Options) {
	b.Helper()
	node := pass.NewTypedNode(pass.Connector{})
	var opts Options
	if confined {
		var c runtime.Confined
		c, opts = confinedPass(b)
		node = runtime.TypedNode[pass.Input, pass.Output]{Runner: runtime.ConfinedNode(c).Runner}
	}
	bld := runtime.NewBuilder("linear")
	a := runtime.AddNode(bld, "a", node, runtime.NodeOptions{})
	m := runtime.AddNode(bld, "b", node, runtime.NodeOptions{})
	z := runtime.AddNode(bld, "c", node, runtime.NodeOptions{})
	runtime.Connect(bld, runtime.Reshape[pass.Output, pass.Input](a.Out("out")), m.In(), runtime.EdgeOptions{})
	runtime.Connect(bld, runtime.Reshape[pass.Output, pass.Input](m.Out("out")), z.In(), runtime.EdgeOptions{})
	f, err := bld.Build()
	if err != nil {
		b.Fatal(err)
	}
	return f, opts
}

// BenchmarkConfinedBolt: durable node executions per second of the
// linear flow of Pure pass nodes on the embedded store (fsync on,
// benchWorkers workers), native against confined in benchRounds
// interleaved rounds; no commit hides the call here, so this is the
// harshest ratio. Each side first works warmJobs jobs untimed, so that
// the figures are the steady state: the confined side has started an
// instance per concurrent activation by then (production starts them on
// demand too).
func BenchmarkConfinedBolt(b *testing.B) {
	jobs := max(b.N/benchRounds, 3000)
	var pairs pairedFigures
	for range benchRounds {
		for i := range eachGCSetting(b) {
			confined := steadyBolt(b, true, jobs)
			pairs.add(i, confined, steadyBolt(b, false, jobs))
		}
	}
	pairs.report(b, "nodes/s-confined", "nodes/s-native", "confined/native")
}

// warmJobs are the jobs each side of a confinement benchmark works
// before the clock starts.
const warmJobs = 300

// steadyBolt works warmJobs and then jobs jobs of the pass flow on a
// fresh embedded store and returns the timed jobs' node executions per
// second.
func steadyBolt(b *testing.B, confined bool, jobs int) float64 {
	flow, opts := passFlow(b, confined)
	s, e := boltEngineWith(b, flow, opts)
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx, benchWorkers) }()
	warm := startConcurrently(b, e, flow.Name, `{"n":1}`, warmJobs, benchWorkers)
	waitIdle(b, e, s, warm[len(warm)-1])
	start := time.Now()
	ids := startConcurrently(b, e, flow.Name, `{"n":1}`, jobs, benchWorkers)
	waitIdle(b, e, s, ids[len(ids)-1])
	elapsed := time.Since(start)
	for _, id := range ids {
		if st, err := e.Wait(context.Background(), id); err != nil || st.State != runtime.StateSucceeded {
			b.Fatalf("job %s: %+v %v", id, st, err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return float64(jobs*3) / elapsed.Seconds()
}

// BenchmarkConfinedPostgres: the same on PostgreSQL (synchronous_commit
// on), one in-process engine of 8 workers on each side, as
// BenchmarkPostgres's one worker process has.
func BenchmarkConfinedPostgres(b *testing.B) {
	jobs := max(b.N/benchRounds, 1000)
	var pairs pairedFigures
	run := func(confined bool) float64 {
		flow, opts := passFlow(b, confined)
		s, e := pgEngineWith(b, flow, opts)
		defer s.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx, 8) }()
		startConcurrently(b, e, flow.Name, `{"n":1}`, warmJobs, 8)
		waitAll(b, s.DB(), warmJobs)
		start := time.Now()
		ids := startConcurrently(b, e, flow.Name, `{"n":1}`, jobs, 8)
		waitAll(b, s.DB(), warmJobs+len(ids))
		elapsed := time.Since(start)
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		return float64(jobs*3) / elapsed.Seconds()
	}
	for range benchRounds {
		for i := range eachGCSetting(b) {
			confined := run(true)
			pairs.add(i, confined, run(false))
		}
	}
	pairs.report(b, "nodes/s-confined", "nodes/s-native", "confined/native")
}

// pgEngineWith is an engine with opts on a fresh PostgreSQL schema with
// flow registered.
func pgEngineWith(b *testing.B, flow *runtime.Flow, opts Options) (*pgstore.Store, *Engine) {
	b.Helper()
	s, err := pgstore.Open(context.Background(), pgtest.FreshSchema(b), pgstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	opts.Owner = "bench"
	e := New(s, opts)
	if err := e.Register(flow); err != nil {
		s.Close()
		b.Fatal(err)
	}
	return s, e
}

// BenchmarkConfinedLatency: jobs of the linear flow one at a time on the
// embedded store, native and confined, interleaved in benchRounds rounds;
// reports each side's step p50 (a third of the job's, start to completion
// commit) and the p50 a confined activation adds.
func BenchmarkConfinedLatency(b *testing.B) {
	jobs := max(b.N/benchRounds, 300)
	var native, confined []time.Duration
	for range benchRounds {
		for _, c := range []bool{true, false} {
			flow, opts := passFlow(b, c)
			_, e := boltEngineWith(b, flow, opts)
			lat := oneAtATime(b, e, jobs)
			if c {
				confined = append(confined, lat...)
			} else {
				native = append(native, lat...)
			}
		}
	}
	slices.Sort(native)
	slices.Sort(confined)
	n, c := native[len(native)/2], confined[len(confined)/2]
	b.ReportMetric(ms(n)/3, "step-p50-ms-native")
	b.ReportMetric(ms(c)/3, "step-p50-ms-confined")
	b.ReportMetric((ms(c)-ms(n))/3, "added-p50-ms/activation")
}

// BenchmarkConfinedModule: what a module costs the process: loading it
// (compiling, checking its imports, starting its first instance) cold,
// with no compilation cache, and from the on-disk cache; starting one
// more instance; and the memory each pooled instance holds (Go heap,
// linear memory included, after a collection, over a full pool).
func BenchmarkConfinedModule(b *testing.B) {
	c, opts := confinedPass(b)
	wasm, err := os.ReadFile(filepath.Join(opts.ModuleDir, c.Path))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	load := func(cacheDir string) (*wasmhost.Host, *wasmhost.Module, time.Duration) {
		h, err := wasmhost.New(ctx, wasmhost.Options{CacheDir: cacheDir})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		m, err := h.Load(ctx, wasm, c.Declaration.NodeInfo(), c.Digest)
		if err != nil {
			b.Fatal(err)
		}
		return h, m, time.Since(start)
	}
	cache := b.TempDir()
	var cold, cached []time.Duration
	for i := range max(b.N, 3) {
		h, _, d := load("")
		h.Close(ctx)
		cold = append(cold, d)
		if i == 0 {
			h, _, _ := load(cache) // fills the cache
			h.Close(ctx)
		}
		h, _, d = load(cache)
		h.Close(ctx)
		cached = append(cached, d)
	}
	slices.Sort(cold)
	slices.Sort(cached)
	b.ReportMetric(ms(cold[len(cold)/2]), "load-cold-ms")
	b.ReportMetric(ms(cached[len(cached)/2]), "load-cached-ms")
	b.ReportMetric(float64(len(wasm))/(1<<20), "module-MiB")

	const pool = 16
	h, m, _ := load(cache)
	defer h.Close(ctx)
	before := heapInUse()
	start := time.Now()
	if err := m.Warm(ctx, 2); err != nil { // Load started the first
		b.Fatal(err)
	}
	b.ReportMetric(ms(time.Since(start)), "instantiate-ms")
	if err := m.Warm(ctx, pool); err != nil {
		b.Fatal(err)
	}
	// wazero keeps an instance's linear memory in the Go heap.
	b.ReportMetric(float64(heapInUse()-before)/(pool-1)/(1<<20), "heap-MiB/instance")
}

// heapInUse is the Go heap in use after a collection.
func heapInUse() int64 {
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}
