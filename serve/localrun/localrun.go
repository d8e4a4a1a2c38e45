// Package localrun runs generated flows from the command line. flowgen run
// compiles a throwaway main that calls Main with the flow's generated
// constructor; Run is the same for tests.
package localrun

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	_ "github.com/lib/pq" // the driver behind FLOWGEN_DATABASE_URL

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore"
	"github.com/flowgen-dev/flowgen/serve/jobapi"
	"github.com/flowgen-dev/flowgen/telemetry/oteltraces"
	"github.com/flowgen-dev/flowgen/telemetry/prommetrics"
)

// IsDatabaseURL reports whether a --store value names PostgreSQL.
func IsDatabaseURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// OpenStore opens a job store: a postgres:// URL, or a bbolt file, which
// is created only when create is true (so a mistyped path to inspect fails
// instead of creating an empty store).
func OpenStore(ctx context.Context, spec string, create bool) (store.Store, error) {
	if IsDatabaseURL(spec) {
		return pgstore.Open(ctx, spec, pgstore.Options{})
	}
	if _, err := os.Stat(spec); err != nil && !(create && errors.Is(err, os.ErrNotExist)) {
		return nil, fmt.Errorf("store %s: %w", spec, err)
	}
	opts := boltstore.Options{}
	if !create {
		opts.LockTimeout = 2 * time.Second // a command, not a worker: say so soon
	}
	return boltstore.Open(spec, opts)
}

// Constructor builds one flow; generated packages have one per flow.
type Constructor func() (*runtime.Flow, error)

// Process is what an entry point takes from the process it runs in: its
// arguments (without the program name), environment and streams. Main,
// WorkerMain and ServeMain fill it from package os; nothing else in
// localrun reads the process's arguments or environment.
type Process struct {
	Args      []string
	LookupEnv func(string) (string, bool)
	Stdin     io.Reader
	Stdout    io.Writer
	Stderr    io.Writer
}

// ThisProcess is the running process's arguments, environment and streams.
func ThisProcess() Process {
	return Process{Args: os.Args[1:], LookupEnv: os.LookupEnv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
}

func (p Process) getenv(name string) string {
	if p.LookupEnv == nil {
		return ""
	}
	v, _ := p.LookupEnv(name)
	return v
}

// Main is Run in this process; it exits.
func Main(root Constructor, others ...Constructor) {
	tuneGC(os.Getenv)
	os.Exit(Run(context.Background(), ThisProcess(), root, others...))
}

// Exit codes of Run.
const (
	ExitSucceeded = 0
	ExitFailed    = 1 // the job failed, was killed, or is still running at --timeout
	ExitUsage     = 2
)

// Run starts one job of root with the input from --input (a JSON file, or
// - for standard input), runs workers in process until the job finishes,
// waits at a checkpoint or --timeout passes, and prints the job's status
// as JSON (Report). Flows in others are registered too (the subflows root
// runs).
func Run(ctx context.Context, p Process, root Constructor, others ...Constructor) int {
	stdin, stdout, stderr := p.Stdin, p.Stdout, p.Stderr
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := commonFlags(fs)
	input := fs.String("input", "", "JSON input of the job: a file, or - for standard input (required)")
	timeout := fs.Duration("timeout", 5*time.Minute, "stop waiting after this long; the job stays in the store")
	key := fs.String("key", "", KeyFlagHelp)
	if err := fs.Parse(p.Args); err != nil {
		return ExitUsage
	}
	if *input == "" {
		fmt.Fprintln(stderr, "run: --input is required")
		return ExitUsage
	}
	var data []byte
	var err error
	if *input == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(*input)
	}
	if err != nil {
		fmt.Fprintf(stderr, "run: input: %v\n", err)
		return ExitUsage
	}
	if !json.Valid(data) {
		fmt.Fprintf(stderr, "run: input %s is not JSON (flowgen run says where)\n", *input)
		return ExitUsage
	}
	e, names, closeAll, err := cf.engine(ctx, p, append([]Constructor{root}, others...), nil)
	if err != nil {
		fmt.Fprintf(stderr, "run: %v\n", err)
		return ExitUsage
	}
	defer closeAll()
	rootName, storeSpec, workers := names[0], cf.store, cf.workers
	job, created, err := e.StartOnce(ctx, rootName, *key, data)
	if err != nil {
		fmt.Fprintf(stderr, "run: %v\n", err)
		return ExitFailed
	}
	fmt.Fprintln(stderr, StartedLine(job, rootName, *key, created))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx, *workers) }()
	out, err := jobapi.Await(ctx, e, job, *timeout)
	cancel()
	<-done
	if err != nil {
		fmt.Fprintf(stderr, "run: %v\n", err)
		return ExitFailed
	}
	return Report(stdout, stderr, job, out, *timeout, StoreFlag(*storeSpec))
}

// KeyFlagHelp is the help of the --key flag of run.
const KeyFlagHelp = "job key: a second run with the same key starts no job and follows the one the key started, whatever its state"

// StartedLine tells which job a run follows: the one it started, or the
// one its key had started before.
func StartedLine(job runtime.JobID, flow, key string, created bool) string {
	if !created {
		return fmt.Sprintf("run: job %s of %s was started before under key %q; following it", job, flow, key)
	}
	return fmt.Sprintf("run: job %s of %s started", job, flow)
}

// Exit codes of Report beyond those of Run.
const (
	// ExitWaiting: the job waits at a checkpoint for a decision.
	ExitWaiting = 3
)

// StoreFlag is the --store argument that names spec to another flowgen
// command ("" for the default store).
func StoreFlag(spec string) string {
	if spec == "" || spec == DefaultStore {
		return ""
	}
	return " --store " + spec
}

// DefaultStore is the embedded store used when none is named.
const DefaultStore = "flowgen.db"

// Report prints the job's status as JSON on stdout, says on stderr what
// to do next when the job did not finish, and returns the exit code:
// ExitSucceeded, ExitFailed (failed, killed, or still running at timeout)
// or ExitWaiting.
func Report(stdout, stderr io.Writer, job runtime.JobID, out jobapi.Outcome, timeout time.Duration, storeFlag string) int {
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(struct {
		Job string `json:"job"`
		runtime.JobStatus
		Waiting []string `json:"waiting,omitempty"`
	}{job.String(), out.Status, out.Waiting})
	switch {
	case len(out.Waiting) > 0:
		for _, node := range out.Waiting {
			fmt.Fprintf(stderr, "run: job %s waits at checkpoint %s for a decision:\n\tflowgen signal%s --approve %s %s   (or --reject)\n", job, node, storeFlag, job, node)
		}
		fmt.Fprintf(stderr, "run: the job goes on in flowgen serve once decided (or in flowgen worker, or the next flowgen run)\n")
		return ExitWaiting
	case !out.Finished:
		fmt.Fprintf(stderr, "run: job %s is still running after %s; it stays in the store: flowgen inspect%s %s\n", job, timeout, storeFlag, job)
		return ExitFailed
	case out.Status.State != runtime.StateSucceeded:
		return ExitFailed
	}
	return ExitSucceeded
}

// Work runs workers for the given flows until ctx is cancelled (flowgen
// worker cancels it on SIGINT or SIGTERM), then lets in-flight steps finish
// and returns. Flags: --store, --workers, --blobs, as for Run.
func Work(ctx context.Context, p Process, flows ...Constructor) int {
	stderr := p.Stderr
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := commonFlags(fs)
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (none when empty)")
	if err := fs.Parse(p.Args); err != nil {
		return ExitUsage
	}
	var metrics *prometheus.Registry
	if *metricsAddr != "" {
		metrics = processMetrics()
	}
	e, _, closeAll, err := cf.engine(ctx, p, flows, metrics)
	if err != nil {
		fmt.Fprintf(stderr, "worker: %v\n", err)
		return ExitUsage
	}
	defer closeAll()
	if metrics != nil {
		addr, stop, err := serveMetrics(*metricsAddr, metrics)
		if err != nil {
			fmt.Fprintf(stderr, "worker: metrics: %v\n", err)
			return ExitUsage
		}
		defer stop()
		fmt.Fprintf(stderr, "worker: metrics on http://%s/metrics\n", addr)
	}
	fmt.Fprintf(stderr, "worker: %d workers on %s for %s\n", *cf.workers, *cf.store, served(e))
	if err := e.Run(ctx, *cf.workers); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "worker: %v\n", err)
		return ExitFailed
	}
	fmt.Fprintln(stderr, "worker: stopped")
	return ExitSucceeded
}

// WorkerMain is Work with the process's arguments, stopping on SIGINT or
// SIGTERM; it exits.
func WorkerMain(flows ...Constructor) { untilSignalled(Work, flows) }

// untilSignalled runs an entry point with the process's arguments until
// SIGINT or SIGTERM, and exits with its code.
func untilSignalled(run func(context.Context, Process, ...Constructor) int, flows []Constructor) {
	tuneGC(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, ThisProcess(), flows...)
	stop()
	os.Exit(code)
}

// tuneGC sets the garbage collector as flowgen's programs run it
// (engine.ProgramGCPercent, engine.ProgramMemoryLimit), unless the
// environment's GOGC or GOMEMLIMIT sets it.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(engine.ProgramGCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(engine.ProgramMemoryLimit)
	}
}

// Defaults of the flags every entry point takes (flowgen run, worker and
// serve use the same).
const (
	DefaultWorkers   = 4
	DefaultBlobs     = "flowgen-blobs"
	DefaultRetention = 7 * 24 * time.Hour
)

// RetentionFlagHelp is the help of --retention, here and in flowgen.
const RetentionFlagHelp = "how long finished jobs are kept before the store's sweeper deletes them, when their flow sets no retention (negative: for good)"

// flags are the flags every entry point takes.
type flags struct {
	store     *string
	workers   *int
	blobs     *string
	retention *time.Duration
	moduleDir *string
}

func commonFlags(fs *flag.FlagSet) flags {
	return flags{
		store:     fs.String("store", DefaultStore, "job store: a bbolt file (created if missing) or a postgres:// URL"),
		workers:   fs.Int("workers", DefaultWorkers, "workers running in this process"),
		blobs:     fs.String("blobs", DefaultBlobs, "directory backing blob capabilities"),
		retention: fs.Duration("retention", DefaultRetention, RetentionFlagHelp),
		moduleDir: fs.String("module-dir", ".", "root of the flows' Go module, where the paths of confined (pulled) connectors' modules start"),
	}
}

// engine opens the store and builds an engine whose capabilities are
// backed by it, the blob directory, environment secrets,
// FLOWGEN_DATABASE_URL and FLOWGEN_CONNECT_TO, and whose metrics go to
// metrics (none when nil), then registers the flows and returns their
// names.
func (f flags) engine(ctx context.Context, p Process, flows []Constructor, metrics *prometheus.Registry) (*engine.Engine, []string, func(), error) {
	st, err := OpenStore(ctx, *f.store, true)
	if err != nil {
		return nil, nil, nil, err
	}
	closers := []func() error{st.Close}
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	fail := func(err error) (*engine.Engine, []string, func(), error) {
		closeAll()
		return nil, nil, nil, err
	}
	tp, stopTracing, err := tracerFromEnv(ctx, p)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, func() error { stopTracing(); return nil })
	grants := engine.Grants{Store: st, BlobDir: *f.blobs, Secrets: engine.EnvSecrets{Lookup: p.LookupEnv}}
	opts := engine.Options{Owner: fmt.Sprintf("%s-%d", hostname(), os.Getpid()), Retention: *f.retention, ModuleDir: *f.moduleDir}
	if metrics != nil {
		opts.Metrics = prommetrics.New(metrics, st)
	}
	if tp != nil {
		grants.Transport, opts.Tracing = oteltraces.Transport(engine.PublicTransport, tp), oteltraces.New(tp)
	}
	if url := p.getenv("FLOWGEN_DATABASE_URL"); url != "" {
		db, err := sql.Open("postgres", url)
		if err != nil {
			return fail(fmt.Errorf("FLOWGEN_DATABASE_URL: %w", err))
		}
		closers = append(closers, db.Close)
		grants.DB = db
	}
	if spec := p.getenv("FLOWGEN_CONNECT_TO"); spec != "" {
		routes, err := engine.ParseConnectTo(spec)
		if err != nil {
			return fail(fmt.Errorf("FLOWGEN_CONNECT_TO: %w", err))
		}
		grants.Transport = &engine.ConnectTo{Routes: routes}
	}
	opts.Capabilities = grants.For
	e := engine.New(st, opts)
	var names []string
	for _, build := range flows {
		fl, err := build()
		if err == nil {
			err = e.Register(fl)
		}
		if err != nil {
			return fail(err)
		}
		names = append(names, fl.Name)
	}
	return e, names, closeAll, nil
}

// served names the flow definitions e serves: each flow's versions,
// newest first, with their short content hashes.
func served(e *engine.Engine) string {
	var out []string
	for _, v := range e.Flows() {
		out = append(out, v.String())
	}
	return strings.Join(out, ", ")
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "flowgen"
	}
	return h
}

// processMetrics is a registry with Go's and the process's collectors,
// for an engine's metrics to join.
func processMetrics() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// serveMetrics serves reg at http://addr/metrics until stop is called, and
// returns the address it listens on (addr with port 0 picks a free port).
func serveMetrics(addr string, reg *prometheus.Registry) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return ln.Addr().String(), func() { srv.Close() }, nil
}
