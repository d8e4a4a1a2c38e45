package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/internal/pgcpu"
	"github.com/flowgen-dev/flowgen/internal/pgwire"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
)

// TestHelperPostgresWorker is not a test: the PostgreSQL benchmarks run the
// test binary with FLOWGEN_PGBENCH_STORE set to make it a worker process.
func TestHelperPostgresWorker(t *testing.T) {
	t.Parallel()
	url := os.Getenv("FLOWGEN_PGBENCH_STORE")
	if url == "" {
		t.Skip("worker process of the PostgreSQL benchmarks")
	}
	// A worker process, with the collector settings of flowgen worker.
	debug.SetGCPercent(ProgramGCPercent)
	debug.SetMemoryLimit(ProgramMemoryLimit)
	s, err := pgstore.Open(context.Background(), url, pgstore.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	e := New(s, Options{Owner: fmt.Sprintf("pid-%d", os.Getpid())})
	for _, f := range []*runtime.Flow{linearFlow(), fanFlow()} {
		if err := e.Register(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
	e.Run(context.Background(), 8) // until killed
}

// pgEngine is an engine on a fresh schema, with flow registered; the store
// closes when the benchmark ends.
func pgEngine(b *testing.B, opts pgstore.Options, flow *runtime.Flow) (string, *pgstore.Store, *Engine) {
	b.Helper()
	url := pgtest.FreshSchema(b)
	s, err := pgstore.Open(context.Background(), url, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	e := New(s, Options{})
	if err := e.Register(flow); err != nil {
		b.Fatal(err)
	}
	return url, s, e
}

// pgRun starts jobs of flow on a fresh schema, works them with procs worker
// processes, and returns the elapsed time from the first start to the last
// completion, and the CPU time PostgreSQL spent meanwhile.
func pgRun(b *testing.B, flow *runtime.Flow, input string, jobs, procs int) (elapsed, cpu time.Duration) {
	b.Helper()
	url, s, e := pgEngine(b, pgstore.Options{}, flow)
	defer spawnWorkers(b, url, procs)()
	cpuBefore, start := serverCPU(b), time.Now()
	ids := startConcurrently(b, e, flow.Name, input, jobs, 8)
	waitAll(b, s.DB(), len(ids))
	return time.Since(start), serverCPU(b) - cpuBefore
}

// serverCPU is PostgreSQL's CPU time so far (internal/pgcpu); the
// benchmarks run on the machine of the server they measure.
func serverCPU(b *testing.B) time.Duration {
	d, err := pgcpu.Used()
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// reportServerCPU reports PostgreSQL's CPU milliseconds per node
// activation: what decides whether more workers and machines would add
// throughput.
func reportServerCPU(b *testing.B, cpu time.Duration, activations int) {
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(activations), "pg-cpu-ms/node")
}

// spawnWorkers starts n worker processes on the store at url and returns
// the function that kills them.
func spawnWorkers(b *testing.B, url string, n int) (stop func()) {
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}
	for range n {
		c := exec.Command(os.Args[0], "-test.run=^TestHelperPostgresWorker$", "-test.timeout=0")
		c.Env = append(os.Environ(), "FLOWGEN_PGBENCH_STORE="+url)
		if err := c.Start(); err != nil {
			stop()
			b.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	return stop
}

// startConcurrently starts jobs of flow from starters goroutines and
// returns their ids in start order.
func startConcurrently(b *testing.B, e *Engine, flow, input string, jobs, starters int) []runtime.JobID {
	ids := make([]runtime.JobID, jobs)
	var wg sync.WaitGroup
	for w := range starters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < jobs; i += starters {
				id, err := e.Start(context.Background(), flow, json.RawMessage(input))
				if err != nil {
					b.Error(err)
					return
				}
				ids[i] = id
			}
		}()
	}
	wg.Wait()
	return ids
}

// waitAll polls, cheaply (the partial index of pending messages), until
// no work is left; every one of the n started jobs is then finished.
func waitAll(b *testing.B, db *sql.DB, n int) {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		var pending int
		err := db.QueryRow(`SELECT count(*) FROM flowgen_messages WHERE stream = $1 AND NOT done`, WorkStream).Scan(&pending)
		if err != nil {
			b.Fatal(err)
		}
		if pending == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatalf("%d jobs did not finish in 5 minutes", n)
}

// BenchmarkPostgres reports durable node executions per second on
// PostgreSQL (synchronous_commit on, the server default) for the 3-node
// flow and the 1-to-100 fan-out, with 1, 2 and 4 worker processes of 8
// goroutines each. bench/river measures River on the same database for the
// ratio (make bench-postgres prints both).
func BenchmarkPostgres(b *testing.B) {
	items := make([]item, 100)
	for i := range items {
		items[i].N = i
	}
	fanIn, _ := json.Marshal(batch{Items: items})
	for _, tc := range []struct {
		name        string
		flow        *runtime.Flow
		input       string
		jobs, nodes int
	}{
		{"linear", linearFlow(), `{"n":1}`, 1000, 3},
		{"fanout", fanFlow(), string(fanIn), 20, 103},
	} {
		for _, procs := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("%s/procs=%d", tc.name, procs), func(b *testing.B) {
				var elapsed, cpu time.Duration
				for range b.N {
					e, c := pgRun(b, tc.flow, tc.input, tc.jobs, procs)
					elapsed, cpu = elapsed+e, cpu+c
				}
				b.ReportMetric(float64(tc.jobs*tc.nodes*b.N)/elapsed.Seconds(), "nodes/s")
				reportServerCPU(b, cpu, tc.jobs*tc.nodes*b.N)
			})
		}
	}
}

// BenchmarkPostgresLatency measures job latency (start to completion
// commit) of the 3-node flow on 2 worker processes at half the peak rate
// measured first in the same run, and reports p50 and p99.
func BenchmarkPostgresLatency(b *testing.B) {
	const jobs = 600
	elapsed, _ := pgRun(b, linearFlow(), `{"n":1}`, jobs, 2)
	peak := float64(jobs) / elapsed.Seconds() // jobs/s
	rate := peak / 2
	url, s, e := pgEngine(b, pgstore.Options{}, linearFlow())
	defer spawnWorkers(b, url, 2)()
	var ids []runtime.JobID
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	for range jobs {
		<-tick.C
		id, err := e.Start(context.Background(), "linear", json.RawMessage(`{"n":1}`))
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
	}
	tick.Stop()
	waitAll(b, s.DB(), jobs)
	var lat []time.Duration
	for _, id := range ids {
		st, err := e.Status(context.Background(), id)
		if err != nil || !st.Done() {
			b.Fatalf("%+v %v", st, err)
		}
		lat = append(lat, st.Finished.Sub(st.Started))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(peak*3, "peak-nodes/s")
	b.ReportMetric(rate, "offered-jobs/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkPostgresOneJob runs jobs of the 3-node flow one at a time on
// PostgreSQL (fsync and synchronous_commit on) with benchWorkers idle
// workers of one in-process engine waiting on LISTEN, and reports job and
// step latency p50 and p99 (start to completion commit, as the job records
// it) next to fdatasync on this machine's disk. b.N is the number of jobs.
func BenchmarkPostgresOneJob(b *testing.B) {
	_, _, e := pgEngine(b, pgstore.Options{}, linearFlow())
	reportLatency(b, oneAtATime(b, e, b.N))
}

// BenchmarkPostgresProtocol counts what the step protocol asks of
// PostgreSQL per node activation, on the wire (internal/pgwire): round
// trips, statements and commits, for jobs of the 3-node flow started and
// worked by one in-process engine of 8 workers, idle polling included.
// These are the denominators of every PostgreSQL figure above.
func BenchmarkPostgresProtocol(b *testing.B) {
	const jobs = 200
	ctx := context.Background()
	var counter pgwire.Counter
	url, _, e := pgEngine(b, pgstore.Options{Dialer: &counter}, linearFlow())
	watch, err := sql.Open("postgres", url) // polls for the end, uncounted
	if err != nil {
		b.Fatal(err)
	}
	defer watch.Close()
	var total pgwire.Counts
	var elapsed, cpu time.Duration
	for range b.N {
		before, start, cpuBefore := counter.Counts(), time.Now(), serverCPU(b)
		startConcurrently(b, e, "linear", `{"n":1}`, jobs, 8)
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- e.Run(runCtx, 8) }()
		waitAll(b, watch, jobs)
		elapsed += time.Since(start)
		cpu += serverCPU(b) - cpuBefore
		stop()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		got := counter.Counts().Sub(before)
		total.RoundTrips += got.RoundTrips
		total.Statements += got.Statements
		total.Commits += got.Commits
	}
	activations := float64(jobs * 3 * b.N)
	b.ReportMetric(float64(total.RoundTrips)/activations, "round-trips/activation")
	b.ReportMetric(float64(total.Statements)/activations, "statements/activation")
	b.ReportMetric(float64(total.Commits)/activations, "commits/activation")
	b.ReportMetric(activations/elapsed.Seconds(), "nodes/s")
	reportServerCPU(b, cpu, int(activations))
}
