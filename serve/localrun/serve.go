package localrun

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/flowgen-dev/flowgen/flowir"
	"github.com/flowgen-dev/flowgen/serve/console"
	"github.com/flowgen-dev/flowgen/serve/jobapi"
)

// repeated is a flag that may be given many times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(s string) error { *r = append(*r, s); return nil }

// Serve runs workers for the given flows and serves the job API
// (jobapi.NewHandler) on --addr until ctx is cancelled, owning the store:
// other flowgen commands find it through the endpoint file next to an
// embedded store and act on its jobs through it. --flow FILE (repeatable)
// names the flows' Flow IR files, whose entry schemas check every job
// input before a job is created.
func Serve(ctx context.Context, p Process, flows ...Constructor) int {
	stderr := p.Stderr
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := commonFlags(fs)
	addr := fs.String("addr", "127.0.0.1:0", "address of the job API (port 0: any free port; the endpoint file says which)")
	var flowFiles repeated
	fs.Var(&flowFiles, "flow", "a flow's Flow IR file, to check job inputs against (repeatable)")
	if err := fs.Parse(p.Args); err != nil {
		return ExitUsage
	}
	graphs := map[string]*flowir.Graph{}
	for _, f := range flowFiles {
		g, diags := flowir.NewLoader().LoadFlow(f)
		if g == nil || diags.HasErrors() {
			fmt.Fprintf(stderr, "serve: %s: %v\n", f, diags.Err())
			return ExitUsage
		}
		graphs[g.Flow.ID] = g
	}
	metrics := processMetrics()
	e, names, closeAll, err := cf.engine(ctx, p, flows, metrics)
	if err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return ExitUsage
	}
	defer closeAll()
	check := func(flow string, input []byte) error {
		name, _, _ := strings.Cut(flow, "@") // name@version
		if g := graphs[name]; g != nil {
			return g.CheckInput("input", input)
		}
		return nil
	}
	storePath, endpointFile := "", "none: a PostgreSQL store is shared directly"
	if !IsDatabaseURL(*cf.store) {
		if storePath, err = filepath.Abs(*cf.store); err != nil {
			fmt.Fprintf(stderr, "serve: %v\n", err)
			return ExitUsage
		}
		endpointFile = jobapi.EndpointPath(storePath)
	}
	ui, err := console.New(e, console.Options{Flows: e, Log: slog.New(slog.NewTextHandler(stderr, nil))})
	if err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return ExitFailed
	}
	workCtx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	workDone := make(chan error, 1)
	go func() { workDone <- e.Run(workCtx, *cf.workers) }()
	err = jobapi.Serve(ctx, *addr, storePath, e, jobapi.HandlerOptions{CheckInput: check, Info: jobapi.Info{Flows: names}, Metrics: metrics, Console: ui},
		func(ep jobapi.Endpoint) {
			fmt.Fprintf(stderr, "serve: %d workers on %s for %s\n", *cf.workers, *cf.store, served(e))
			fmt.Fprintf(stderr, "serve: job API on http://%s (endpoint file %s); run, inspect, jobs, pause, resume, kill and signal go through it\n",
				ep.Addr, endpointFile)
			fmt.Fprintf(stderr, "serve: web console on %s\n", ep.ConsoleURL())
		})
	stopWork()
	if werr := <-workDone; werr != nil && !errors.Is(werr, context.Canceled) && err == nil {
		err = werr
	}
	if err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return ExitFailed
	}
	fmt.Fprintln(stderr, "serve: stopped")
	return ExitSucceeded
}

// ServeMain is Serve with the process's arguments, stopping on SIGINT or
// SIGTERM; it exits.
func ServeMain(flows ...Constructor) { untilSignalled(Serve, flows) }
