package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/serve/jobapi"
	"github.com/flowgen-dev/flowgen/serve/localrun"
)

// defaultStore is the embedded store file used when --store is not given.
const defaultStore = "flowgen.db"

const storeFlagHelp = "job store: a bbolt file path or a postgres:// URL (default $FLOWGEN_STORE, else " + defaultStore + ")"

const inspectUsage = `Usage: flowgen inspect [--store PATH] [--history] [--raw | --json] JOB

Prints a job in words: its flow and version, state, start and finish
times, then each activation (node) with its state, attempts, finish time,
the port its output left on and its error, forEach elements under their
forEach, and the checkpoints waiting for a decision with the command that
decides. --history adds the job's history: every event (started,
launched, retrying, succeeded, failed, canceled, paused, resumed, killed,
signaled, compensating, finished) with its time, written in the same
commit as what it records. --raw adds the ledger digits and every stored
key; --json prints all of it as JSON.

When flowgen serve owns the store, inspect asks it (through the endpoint
file next to the store); otherwise it opens the store itself.

Exit status: 0 printed, 1 no such job, 2 usage or I/O error.

Flags:
`

const controlUsage = `Usage: flowgen %[1]s [--store PATH] JOB%[2]s

%[3]s When flowgen serve owns the store, the command goes through it;
otherwise it opens the store itself.

Exit status: 0 done, 1 no such job, 2 usage or I/O error.

Flags:
`

// storeFlag registers --store on fs and returns a function that opens
// the job service on it: the server that owns the store when one runs,
// else the store itself.
func storeFlag(fs *flag.FlagSet) func(e *env) (jobapi.Service, func(), error) {
	path := fs.String("store", "", storeFlagHelp)
	return func(e *env) (jobapi.Service, func(), error) { return openJobs(e.ctx, resolveStore(e, *path)) }
}

// openJobs returns the job service for the store: a client of the
// flowgen serve that owns an embedded store, or an engine on the store.
func openJobs(ctx context.Context, spec string) (jobapi.Service, func(), error) {
	if !localrun.IsDatabaseURL(spec) {
		abs, err := filepath.Abs(spec)
		if err != nil {
			return nil, nil, err
		}
		c, err := jobapi.Discover(ctx, abs)
		if err == nil {
			return c, func() {}, nil
		}
		if !errors.Is(err, jobapi.ErrNoServer) {
			return nil, nil, err
		}
	}
	s, err := localrun.OpenStore(ctx, spec, false)
	if errors.Is(err, boltstore.ErrLocked) {
		return nil, nil, fmt.Errorf("%w\n\tanother flowgen command (worker or run) holds it; run flowgen serve instead of flowgen worker and every command goes through it", err)
	}
	if err != nil {
		return nil, nil, err
	}
	return engine.New(s, engine.Options{Owner: "flowgen-cli", Visibility: time.Minute}), func() { s.Close() }, nil
}

// resolveStore applies the --store defaults: $FLOWGEN_STORE, else the
// embedded file in the working directory.
func resolveStore(e *env, flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if env := e.getenv("FLOWGEN_STORE"); env != "" {
		return env
	}
	return defaultStore
}

func runInspect(e *env, args []string) int {
	fs := newFlagSet(e, "inspect", inspectUsage)
	open := storeFlag(fs)
	asJSON := fs.Bool("json", false, "print the inspection as JSON")
	raw := fs.Bool("raw", false, "also print ledger digits and every stored key")
	history := fs.Bool("history", false, "also print the job's history: every event with its time")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	job, svc, done, code := jobArgs(e, fs, "inspect", rest, open)
	if svc == nil {
		return code
	}
	defer done()
	in, err := svc.Inspect(e.ctx, job)
	if err != nil {
		return jobError(e, "inspect", err)
	}
	if *asJSON {
		return writeJSON(e, in)
	}
	var waiting []string
	if !in.Status.Done() {
		waiting, _ = svc.Waiting(e.ctx, job)
	}
	writeInspection(e.stdout, in, waiting, inspectView{raw: *raw, history: *history})
	return exitOK
}

// jobError reports a job command's error: 1 for an unknown job or
// checkpoint, 2 otherwise.
func jobError(e *env, name string, err error) int {
	fmt.Fprintf(e.stderr, "flowgen %s: %v\n", name, err)
	if errors.Is(err, store.ErrNotFound) {
		return exitProblems
	}
	return exitUsage
}

// writeJSON prints v as indented JSON, leaving <, > and & as they are.
func writeJSON(e *env, v any) int {
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(e.stderr, "flowgen: %v\n", err)
		return exitUsage
	}
	return exitOK
}

// jobArgs checks for exactly one JOB argument and opens the job service;
// on failure it reports and returns a nil service with the exit code.
func jobArgs(e *env, fs *flag.FlagSet, name string, rest []string, open func(*env) (jobapi.Service, func(), error)) (runtime.JobID, jobapi.Service, func(), int) {
	if len(rest) != 1 {
		fmt.Fprintf(e.stderr, "flowgen %s: name exactly one job id\n\n", name)
		fs.Usage()
		return runtime.JobID{}, nil, nil, exitUsage
	}
	job, err := runtime.ParseJobID(rest[0])
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen %s: %v\n", name, err)
		return job, nil, nil, exitUsage
	}
	svc, done, err := open(e)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen %s: %v\n", name, err)
		return job, nil, nil, exitUsage
	}
	return job, svc, done, exitOK
}

// controlCommand builds kill, pause and resume.
func controlCommand(name, summary, extraArgs, what string, act func(svc jobapi.Service, e *env, job runtime.JobID, reason string) error) command {
	usage := fmt.Sprintf(controlUsage, name, extraArgs, what)
	return command{name, summary, usage, func(e *env, args []string) int {
		fs := newFlagSet(e, name, usage)
		open := storeFlag(fs)
		var reason *string
		if name == "kill" {
			reason = fs.String("reason", "killed by an operator", "why (recorded on the tombstone)")
		}
		rest, err := parseFlags(fs, args)
		if err != nil {
			return flagExit(err)
		}
		job, svc, done, code := jobArgs(e, fs, name, rest, open)
		if svc == nil {
			return code
		}
		defer done()
		why := ""
		if reason != nil {
			why = *reason
		}
		if err := act(svc, e, job, why); err != nil {
			return jobError(e, name, err)
		}
		fmt.Fprintf(e.stdout, "%s: %s\n", job, map[string]string{"kill": "killed", "pause": "paused", "resume": "resumed"}[name])
		return exitOK
	}}
}

// signalWhere is flowgen signal --where: the decision at node in every
// waiting job q matches.
func signalWhere(e *env, open func(*env) (jobapi.Service, func(), error), q runtime.JobQuery, node string, d runtime.Decision) int {
	svc, done, err := open(e)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen signal: %v\n", err)
		return exitUsage
	}
	defer done()
	resumed, jobs, err := jobapi.SignalAll(e.ctx, svc, q, node, d)
	decision := map[bool]string{true: "approved", false: "rejected"}[d.Approved]
	fmt.Fprintf(e.stdout, "%s at %s in %d job(s) (%d activation(s) resumed)\n", decision, node, jobs, resumed)
	if err != nil {
		return jobError(e, "signal", err)
	}
	if jobs == 0 {
		fmt.Fprintf(e.stderr, "flowgen signal: no job matching %v waits at %s\n", q.Where, node)
		return exitProblems
	}
	return exitOK
}

func controlCommands() []command {
	return []command{
		controlCommand("kill", "kill a job from the top", " [--reason TEXT]", "Kill a job: every activation not yet run finishes canceled and the job ends killed.",
			func(svc jobapi.Service, e *env, job runtime.JobID, reason string) error {
				return svc.Kill(e.ctx, job, reason)
			}),
		controlCommand("pause", "hold a job until it is resumed", "", "Pause a job: workers hand its messages back until it is resumed.",
			func(svc jobapi.Service, e *env, job runtime.JobID, _ string) error { return svc.Pause(e.ctx, job) }),
		controlCommand("resume", "let a paused job continue", "", "Resume a paused job.",
			func(svc jobapi.Service, e *env, job runtime.JobID, _ string) error { return svc.Resume(e.ctx, job) }),
		{"signal", "record a decision at a waiting checkpoint", signalUsage, runSignal},
		{"jobs", "list jobs, newest first, with filters", jobsUsage, runJobs},
		{"dlq", "list, show, requeue or fail dead letters", dlqUsage, runDLQ},
	}
}

const signalUsage = `Usage: flowgen signal [--store PATH] (--approve | --reject) [--by NAME] [--note TEXT] JOB NODE
       flowgen signal [--store PATH] (--approve | --reject) [--by NAME] [--note TEXT] [--flow ID] --where PATH=VALUE... NODE

Records a human decision at the checkpoint node NODE of job JOB and resumes
the job: the checkpoint's input continues on its "approved" or "rejected"
port. A decision is final. When flowgen serve owns the store the job goes
on at once; otherwise it goes on in the next process that runs workers
for its flow (flowgen serve, worker or run).

With --where (and --flow) instead of JOB, the decision goes to every job
whose input matches and that waits at NODE (as flowgen jobs --state
waiting lists them), each job on its own.

Exit status: 0 resumed, 1 no such job or no checkpoint NODE waiting (no
matching job waiting, with --where), 2 usage or I/O error.

Flags:
`

func runSignal(e *env, args []string) int {
	fs := newFlagSet(e, "signal", signalUsage)
	open := storeFlag(fs)
	approve := fs.Bool("approve", false, "approve")
	reject := fs.Bool("reject", false, "reject")
	by := fs.String("by", e.getenv("USER"), "who decides (recorded)")
	note := fs.String("note", "", "why (recorded)")
	where := whereFlags{}
	fs.Var(where, "where", "signal every waiting job whose input field PATH equals VALUE (repeatable), instead of one JOB")
	flow := fs.String("flow", "", "with --where: only jobs of this flow")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	d := runtime.Decision{Approved: *approve, By: *by, Note: *note}
	if len(where) > 0 {
		if *approve == *reject || len(rest) != 1 {
			fmt.Fprint(e.stderr, "flowgen signal: with --where, give exactly one of --approve and --reject and a node\n\n")
			fs.Usage()
			return exitUsage
		}
		return signalWhere(e, open, runtime.JobQuery{Flow: *flow, Where: where}, rest[0], d)
	}
	if *approve == *reject || len(rest) != 2 {
		fmt.Fprint(e.stderr, "flowgen signal: give exactly one of --approve and --reject, a job and a node\n\n")
		fs.Usage()
		return exitUsage
	}
	job, svc, done, code := jobArgs(e, fs, "signal", rest[:1], open)
	if svc == nil {
		return code
	}
	defer done()
	n, err := svc.Signal(e.ctx, job, rest[1], d)
	if err != nil {
		return jobError(e, "signal", err)
	}
	decision := map[bool]string{true: "approved", false: "rejected"}[*approve]
	fmt.Fprintf(e.stdout, "%s: %s at %s (%d activation(s) resumed)\n", job, decision, rest[1], n)
	if _, remote := svc.(*jobapi.Client); !remote {
		fmt.Fprintf(e.stderr, "flowgen signal: no flowgen serve owns the store: the job goes on when workers for its flow run (flowgen serve, worker or run)\n")
	}
	return exitOK
}
