package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	bolt "go.etcd.io/bbolt"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/telemetry/oteltraces"
	"github.com/flowgen-dev/flowgen/telemetry/prommetrics"
)

type item struct {
	N int `json:"n"`
}

type batch struct {
	Items []item `json:"items"`
}

var noop = runtime.Typed(runtime.NodeInfo{ID: "bench.noop", Effects: runtime.Pure, Determinism: runtime.Strict},
	func(ctx *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) { return in, nil })

func linearFlow() *runtime.Flow {
	return &runtime.Flow{
		Name:  "linear",
		Nodes: []*runtime.FlowNode{{Alias: "a", Runner: noop}, {Alias: "b", Runner: noop}, {Alias: "c", Runner: noop}},
		Edges: []runtime.Edge{{From: "a", FromPort: "out", To: "b"}, {From: "b", FromPort: "out", To: "c"}},
	}
}

func fanFlow() *runtime.Flow {
	return &runtime.Flow{
		Name: "fan",
		Nodes: []*runtime.FlowNode{
			{Alias: "each", ForEach: &runtime.ForEach{Items: "items", Do: "work"}},
			{Alias: "work", Runner: noop},
			{Alias: "after", Runner: noop},
		},
		Edges: []runtime.Edge{{From: "each", FromPort: "out", To: "after"}},
	}
}

const benchWorkers = 16

// boltEngine is an engine on a fresh store file (fsync on) with flow
// registered; the store closes when the benchmark ends.
func boltEngine(b *testing.B, flow *runtime.Flow) (*boltstore.Store, *Engine) {
	return boltEngineWith(b, flow, Options{})
}

// boltEngineWith is boltEngine with opts (its Owner set).
func boltEngineWith(b *testing.B, flow *runtime.Flow, opts Options) (*boltstore.Store, *Engine) {
	b.Helper()
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	opts.Owner = "bench"
	e := New(s, opts)
	if err := e.Register(flow); err != nil {
		b.Fatal(err)
	}
	return s, e
}

// runJobs starts jobs of flow from benchWorkers goroutines while
// benchWorkers workers already run, as producers and workers meet in
// production (and as the raw baseline's benchWorkers callers share its
// batches), fsync on every commit, and waits for all to finish (waitIdle);
// it returns the elapsed time, and fails the benchmark unless every job
// succeeded.
func runJobs(b *testing.B, flow *runtime.Flow, input string, jobs int) (time.Duration, *boltstore.Store) {
	return runJobsWith(b, flow, input, jobs, Options{})
}

// runJobsWith is runJobs on an engine with opts.
func runJobsWith(b *testing.B, flow *runtime.Flow, input string, jobs int, opts Options) (time.Duration, *boltstore.Store) {
	b.Helper()
	s, e := boltEngineWith(b, flow, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- e.Run(ctx, benchWorkers) }()
	ids := startConcurrently(b, e, flow.Name, input, jobs, benchWorkers)
	waitIdle(b, e, s, ids[len(ids)-1])
	elapsed := time.Since(start)
	for _, id := range ids {
		st, err := e.Wait(context.Background(), id)
		if err != nil || st.State != runtime.StateSucceeded {
			b.Fatalf("job %s: %+v %v", id, st, err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return elapsed, s
}

// waitIdle returns once the job last started has finished and s's work
// stream holds no message left to process (every job has finished),
// looking every millisecond. Like BenchmarkPostgres's waitAll, it finds
// the end of the work without reading each job's status inside the timed
// run: on bbolt those reads (a read transaction and a JSON decode each,
// about 10 ms for 2,000 jobs) ran one after another at the end of every
// round, and the raw baseline pays nothing like them. The pending
// messages are listed only once the last job is done, when few are left.
// The caller checks every job after the clock stops.
func waitIdle(b *testing.B, e *Engine, s *boltstore.Store, last runtime.JobID) {
	b.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		st, err := e.Status(ctx, last)
		if err != nil {
			b.Fatal(err)
		}
		pending := 1
		if st.Done() {
			err = s.View(ctx, func(tx store.ReadTx) error {
				ms, err := tx.Pending(WorkStream)
				pending = len(ms)
				return err
			})
		}
		if err != nil {
			b.Fatal(err)
		}
		if pending == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	b.Fatal("work left after 5 minutes")
}

// rawBoltTxPerSecond is the baseline: transactions of three puts (about
// what one step writes) through bbolt's Batch tuned for the load (a batch
// as large as the number of callers, 1 ms delay) from benchWorkers
// goroutines, fsync on, measured in the same run.
func rawBoltTxPerSecond(b *testing.B, txns int) float64 {
	b.Helper()
	db, err := bolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.MaxBatchDelay = time.Millisecond
	db.MaxBatchSize = benchWorkers
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err }); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	start := time.Now()
	for w := range benchWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < txns; i += benchWorkers {
				err := db.Batch(func(tx *bolt.Tx) error {
					bk := tx.Bucket([]byte("b"))
					for j := range 3 {
						if err := bk.Put([]byte(fmt.Sprintf("k%d/%d", i, j)), make([]byte, 64)); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(txns) / time.Since(start).Seconds()
}

// benchRounds is how many times benchmarkFlow alternates flowgen and its
// raw baseline. The disk of this machine kind drifts by about ±10% from
// one run to the next, so a ratio of one run of each rides on whichever
// drew the better disk; the median of paired rounds does not.
const benchRounds = 5

// benchmarkFlow runs b.N jobs of flow in benchRounds rounds, each followed
// by the raw baseline on as many transactions as the round executed
// nodes, and reports the medians of flowgen's nodes/s, of the baseline's
// transactions/s and of the ratio of each round's pair. Each round runs
// the pair twice: at Go's default collector setting (a program embedding
// the Engine; the plain figures) and at the one flowgen's own programs
// run with (ProgramGCPercent; the -programGC figures), the baseline at
// the same setting as flowgen.
func benchmarkFlow(b *testing.B, flow *runtime.Flow, input string, nodesPerJob int) {
	// At least 6,000 nodes a round: shorter rounds measure the machine.
	jobs := max(b.N/benchRounds, (6000+nodesPerJob-1)/nodesPerJob)
	var pairs pairedFigures
	var allocs []float64
	var bytesPerJob float64
	for range benchRounds {
		for i := range eachGCSetting(b) {
			var before, after goruntime.MemStats
			goruntime.ReadMemStats(&before)
			elapsed, s := runJobs(b, flow, input, jobs)
			goruntime.ReadMemStats(&after)
			if i == 0 {
				allocs = append(allocs, float64(after.TotalAlloc-before.TotalAlloc)/float64(jobs*nodesPerJob))
			}
			nodesPerSec := float64(jobs*nodesPerJob) / elapsed.Seconds()
			st, err := os.Stat(s.Path())
			if err != nil {
				b.Fatal(err)
			}
			s.Close()
			bytesPerJob = float64(st.Size()) / float64(jobs)
			txn := rawBoltTxPerSecond(b, max(jobs*nodesPerJob, 2000))
			pairs.add(i, nodesPerSec, txn)
		}
	}
	pairs.report(b, "nodes/s", "raw-bolt-txn/s", "nodes-per-raw-txn")
	b.ReportMetric(bytesPerJob, "store-bytes/job")
	// Heap bytes allocated per node (this process, workers and starts):
	// not timed, so it moves with the code and not with the machine, and
	// garbage collection is a large part of the time on 2 cores.
	b.ReportMetric(median(allocs), "alloc-bytes/node")
}

// eachGCSetting sets the collector to Go's default (index 0: a program
// embedding the Engine) and then to ProgramGCPercent (index 1: flowgen's
// own programs), yielding each index, and restores the setting the
// benchmark found when the loop ends.
func eachGCSetting(b *testing.B) iter.Seq[int] {
	return func(yield func(int) bool) {
		b.Helper()
		defer debug.SetGCPercent(debug.SetGCPercent(100))
		for i, percent := range []int{100, ProgramGCPercent} {
			debug.SetGCPercent(percent)
			if !yield(i) {
				return
			}
		}
	}
}

// pairedFigures are the two figures of each round and their ratio (the
// first over the second), at each collector setting eachGCSetting yields.
type pairedFigures [2]struct{ first, second, ratio []float64 }

// add records a round's pair at collector setting gc.
func (p *pairedFigures) add(gc int, first, second float64) {
	f := &p[gc]
	f.first, f.second, f.ratio = append(f.first, first), append(f.second, second), append(f.ratio, first/second)
}

// report reports the medians under the names given, the figures at
// flowgen's programs' setting with "-programGC" after them.
func (p *pairedFigures) report(b *testing.B, first, second, ratio string) {
	for gc, suffix := range []string{"", "-programGC"} {
		b.ReportMetric(median(p[gc].first), first+suffix)
		b.ReportMetric(median(p[gc].second), second+suffix)
		b.ReportMetric(median(p[gc].ratio), ratio+suffix)
	}
}

// median is the middle value of xs (which it sorts).
func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// BenchmarkLinearFlow: durable node executions per second of a 3-node
// linear flow of no-op nodes; b.N is the number of jobs.
func BenchmarkLinearFlow(b *testing.B) {
	benchmarkFlow(b, linearFlow(), `{"n":1}`, 3)
}

// BenchmarkFanOutFlow: the same for a 1-to-100 fan-out with its join and
// one node after it (102 activations plus the forEach itself per job).
func BenchmarkFanOutFlow(b *testing.B) {
	items := make([]item, 100)
	for i := range items {
		items[i].N = i
	}
	in, _ := json.Marshal(batch{Items: items})
	benchmarkFlow(b, fanFlow(), string(in), 103)
}

var _ store.Store = (*boltstore.Store)(nil)

// BenchmarkJobsInFlight starts 100,000 jobs of the 3-node flow, works them
// for two seconds, and reports the process's peak RSS and the store's size
// per job: job state lives in the store, not in memory.
func BenchmarkJobsInFlight(b *testing.B) {
	const jobs = 100_000
	s, e := boltEngine(b, linearFlow())
	for range b.N {
		startConcurrently(b, e, "linear", `{"n":1}`, jobs, 8)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := e.Run(ctx, benchWorkers); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
	st, err := os.Stat(s.Path())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(peakRSSMiB(b), "peak-RSS-MiB")
	b.ReportMetric(float64(st.Size())/float64(jobs*b.N), "store-bytes/job")
}

// peakRSSMiB reads the process's peak resident set size (VmHWM).
func peakRSSMiB(b *testing.B) float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skip("no /proc: peak RSS not measurable here")
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(rest), "%f", &kb)
			return kb / 1024
		}
	}
	return 0
}

// BenchmarkBoltLatency runs jobs of the 3-node flow one at a time on the
// embedded store, fsync on, with benchWorkers idle workers waiting, and
// reports the p50 and p99 of a job's latency (start to completion commit)
// and of one step (a third of it), next to the p50 of a 4 KiB write and
// fdatasync on the same disk measured in the same run. b.N is the number
// of jobs.
func BenchmarkBoltLatency(b *testing.B) {
	_, e := boltEngine(b, linearFlow())
	reportLatency(b, oneAtATime(b, e, b.N))
}

// oneAtATime works n jobs of the linear flow on e with benchWorkers
// workers, starting each when the one before has finished, and returns
// their latencies (start to completion commit, as the job records them),
// sorted.
func oneAtATime(b *testing.B, e *Engine, n int) []time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx, benchWorkers) }()
	lat := make([]time.Duration, 0, n)
	for range n {
		id, err := e.Start(context.Background(), "linear", json.RawMessage(`{"n":1}`))
		if err != nil {
			b.Fatal(err)
		}
		st, err := e.Wait(context.Background(), id)
		if err != nil || st.State != runtime.StateSucceeded {
			b.Fatalf("job %s: %+v %v", id, st, err)
		}
		lat = append(lat, st.Finished.Sub(st.Started))
	}
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	slices.Sort(lat)
	return lat
}

// reportLatency reports sorted job latencies of the 3-node flow per job
// and per step, with the disk's fdatasync time in the same run.
func reportLatency(b *testing.B, lat []time.Duration) {
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	b.ReportMetric(ms(p50), "job-p50-ms")
	b.ReportMetric(ms(p99), "job-p99-ms")
	b.ReportMetric(ms(p50)/3, "step-p50-ms")
	b.ReportMetric(ms(p99)/3, "step-p99-ms")
	b.ReportMetric(ms(fdatasyncP50(b, 200)), "fdatasync-p50-ms")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// fdatasyncP50 is the median time of writing 4 KiB and syncing it, n
// times, in a file beside the benchmark's store.
func fdatasyncP50(b *testing.B, n int) time.Duration {
	f, err := os.Create(filepath.Join(b.TempDir(), "sync"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, 4096)
	var ds []time.Duration
	for i := range n {
		start := time.Now()
		if _, err := f.WriteAt(page, int64(i%16)*4096); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// BenchmarkObservabilityCost: the linear flow's node executions per
// second on bbolt with metrics (a registry) and tracing (every span
// batched to an exporter that drops it, as a no-op collector would) on,
// against both off, in benchRounds interleaved rounds of at least 2,000
// jobs (shorter rounds measure the machine's noise); the ratio is the
// median of each round's pair.
func BenchmarkObservabilityCost(b *testing.B) {
	jobs := max(b.N/benchRounds, 2000)
	// Each round measures off and on at Go's default collector setting
	// (a program embedding the Engine) and at the one flowgen's own
	// programs run with (ProgramGCPercent): the cost is mostly garbage
	// collection, so the two differ.
	var pairs pairedFigures
	for range benchRounds {
		for i := range eachGCSetting(b) {
			elapsed, s := runJobs(b, linearFlow(), `{"n":1}`, jobs)
			s.Close()
			plain := float64(jobs*3) / elapsed.Seconds()
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
			elapsed, s = runJobsWith(b, linearFlow(), `{"n":1}`, jobs, Options{Metrics: prommetrics.New(prometheus.NewRegistry(), nil), Tracing: oteltraces.New(tp)})
			s.Close()
			tp.Shutdown(context.Background())
			observed := float64(jobs*3) / elapsed.Seconds()
			pairs.add(i, observed, plain)
		}
	}
	pairs.report(b, "nodes/s-observed", "nodes/s-plain", "observed/plain")
}
