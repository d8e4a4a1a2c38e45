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
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	_ "github.com/lib/pq" // the driver behind FLOWGEN_DATABASE_URL

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore"
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
	return boltstore.Open(spec, boltstore.Options{})
}

// Constructor builds one flow; generated packages have one per flow.
type Constructor func() (*runtime.Flow, error)

// Main is Run with the process's arguments and streams; it exits.
func Main(root Constructor, others ...Constructor) {
	os.Exit(Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, root, others...))
}

// Exit codes of Run.
const (
	ExitSucceeded = 0
	ExitFailed    = 1 // the job failed, was killed, or is still running at --timeout
	ExitUsage     = 2
)

// Run starts one job of root with the input from --input (a JSON file, or
// - for standard input), runs workers in process until the job finishes or
// --timeout passes, and prints the job's status as JSON. Flows in others
// are registered too (the subflows root runs).
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, root Constructor, others ...Constructor) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	storeSpec := fs.String("store", "flowgen.db", "job store: a bbolt file (created if missing) or a postgres:// URL")
	input := fs.String("input", "", "JSON input of the job: a file, or - for standard input (required)")
	timeout := fs.Duration("timeout", 5*time.Minute, "stop waiting after this long; the job stays in the store")
	workers := fs.Int("workers", 4, "workers running in this process")
	blobs := fs.String("blobs", "flowgen-blobs", "directory backing blob capabilities")
	if err := fs.Parse(args); err != nil {
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
		fmt.Fprintf(stderr, "run: input %s is not JSON\n", *input)
		return ExitUsage
	}
	e, closeAll, err := engine(ctx, *storeSpec, *blobs)
	if err != nil {
		fmt.Fprintf(stderr, "run: %v\n", err)
		return ExitUsage
	}
	defer closeAll()
	var rootName string
	for i, build := range append([]Constructor{root}, others...) {
		f, err := build()
		if err == nil {
			err = e.Register(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "run: %v\n", err)
			return ExitUsage
		}
		if i == 0 {
			rootName = f.Name
		}
	}
	job, err := e.Start(ctx, rootName, data)
	if err != nil {
		fmt.Fprintf(stderr, "run: %v\n", err)
		return ExitFailed
	}
	fmt.Fprintf(stderr, "run: job %s of %s started\n", job, rootName)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx, *workers) }()
	status, finished := wait(ctx, e, job, *timeout)
	cancel()
	<-done
	out, _ := json.MarshalIndent(struct {
		Job string `json:"job"`
		runtime.JobStatus
	}{job.String(), status}, "", "  ")
	fmt.Fprintln(stdout, string(out))
	switch {
	case !finished:
		fmt.Fprintf(stderr, "run: job %s is still running after %s (parked at a checkpoint, or slow); continue with flowgen inspect|signal --store %s %s\n", job, *timeout, *storeSpec, job)
		return ExitFailed
	case status.State != runtime.StateSucceeded:
		return ExitFailed
	}
	return ExitSucceeded
}

// wait polls the job's status until it leaves running or timeout passes.
func wait(ctx context.Context, e *runtime.Engine, job runtime.JobID, timeout time.Duration) (runtime.JobStatus, bool) {
	deadline := time.Now().Add(timeout)
	for {
		st, err := e.Status(ctx, job)
		if err == nil && st.State != runtime.StateRunning {
			return st, true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return st, false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Work runs workers for the given flows until ctx is cancelled (flowgen
// worker cancels it on SIGINT or SIGTERM), then lets in-flight steps finish
// and returns. Flags: --store, --workers, --blobs, as for Run.
func Work(ctx context.Context, args []string, stderr io.Writer, flows ...Constructor) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	storeSpec := fs.String("store", "flowgen.db", "job store: a bbolt file (created if missing) or a postgres:// URL")
	workers := fs.Int("workers", 4, "workers in this process")
	blobs := fs.String("blobs", "flowgen-blobs", "directory backing blob capabilities")
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	e, closeAll, err := engine(ctx, *storeSpec, *blobs)
	if err != nil {
		fmt.Fprintf(stderr, "worker: %v\n", err)
		return ExitUsage
	}
	defer closeAll()
	var names []string
	for _, build := range flows {
		f, err := build()
		if err == nil {
			err = e.Register(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "worker: %v\n", err)
			return ExitUsage
		}
		names = append(names, f.Name)
	}
	fmt.Fprintf(stderr, "worker: %d workers on %s for %s\n", *workers, *storeSpec, strings.Join(names, ", "))
	if err := e.Run(ctx, *workers); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "worker: %v\n", err)
		return ExitFailed
	}
	fmt.Fprintln(stderr, "worker: stopped")
	return ExitSucceeded
}

// WorkerMain is Work with the process's arguments, stopping on SIGINT or
// SIGTERM; it exits.
func WorkerMain(flows ...Constructor) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(Work(ctx, os.Args[1:], os.Stderr, flows...))
}

// engine opens the store and builds an engine whose capabilities are
// backed by it, the blob directory, environment secrets and
// FLOWGEN_DATABASE_URL.
func engine(ctx context.Context, storeSpec, blobs string) (*runtime.Engine, func(), error) {
	st, err := OpenStore(ctx, storeSpec, true)
	if err != nil {
		return nil, nil, err
	}
	closers := []func() error{st.Close}
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	grants := runtime.Grants{Store: st, BlobDir: blobs}
	if url := os.Getenv("FLOWGEN_DATABASE_URL"); url != "" {
		db, err := sql.Open("postgres", url)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("FLOWGEN_DATABASE_URL: %w", err)
		}
		closers = append(closers, db.Close)
		grants.DB = db
	}
	e := runtime.New(st, runtime.Options{Owner: fmt.Sprintf("%s-%d", hostname(), os.Getpid()), Capabilities: grants.For})
	return e, closeAll, nil
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "flowgen"
	}
	return h
}
