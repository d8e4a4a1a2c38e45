package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/localrun"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// defaultStore is the embedded store file used when --store is not given.
const defaultStore = "flowgen.db"

const storeFlagHelp = "job store: a bbolt file path or a postgres:// URL (default $FLOWGEN_STORE, else " + defaultStore + ")"

const inspectUsage = `Usage: flowgen inspect [--store PATH] [--json] JOB

Prints everything the store holds about a job, read in one prefix scan of its
root: metadata, status, each activation's result, and the ledgers (activity,
GUID, semaphore, fan-out counts) decoded into words. The embedded store file
is locked by a running worker; inspect it while no worker has it open (a
PostgreSQL store can be inspected while workers run).

Exit status: 0 printed, 1 no such job, 2 usage or I/O error.

Flags:
`

const controlUsage = `Usage: flowgen %[1]s [--store PATH] JOB%[2]s

%[3]s

Exit status: 0 done, 1 no such job, 2 usage or I/O error.

Flags:
`

// storeFlag registers --store on fs and returns a function that opens it.
func storeFlag(fs *flag.FlagSet) func(ctx context.Context) (store.Store, error) {
	path := fs.String("store", "", storeFlagHelp)
	return func(ctx context.Context) (store.Store, error) {
		return localrun.OpenStore(ctx, resolveStore(*path), false)
	}
}

// resolveStore applies the --store defaults: $FLOWGEN_STORE, else the
// embedded file in the working directory.
func resolveStore(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if env := os.Getenv("FLOWGEN_STORE"); env != "" {
		return env
	}
	return defaultStore
}

func runInspect(e *env, args []string) int {
	fs := newFlagSet(e, "inspect", inspectUsage)
	open := storeFlag(fs)
	asJSON := fs.Bool("json", false, "print the inspection as JSON")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	job, s, code := jobArgs(e, fs, "inspect", rest, open)
	if s == nil {
		return code
	}
	defer s.Close()
	in, err := runtime.InspectJob(e.ctx, s, job)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen inspect: %v\n", err)
		return exitProblems
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(in); err != nil {
			return exitUsage
		}
		return exitOK
	}
	writeInspection(e.stdout, in)
	return exitOK
}

// writeInspection prints the job's activation tree, then every stored key.
func writeInspection(w io.Writer, in *runtime.Inspection) {
	fmt.Fprintf(w, "job %s: %s\n", in.Job, in.Summary)
	for _, v := range in.Tree {
		writeActivation(w, v, "  ")
	}
	fmt.Fprintf(w, "stored state:\n")
	entries := append([]runtime.InspectionEntry(nil), in.Entries...)
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Key < entries[j].Key })
	for _, en := range entries {
		switch {
		case en.Counter != nil && en.Words != "":
			fmt.Fprintf(w, "  %-40s %015d  %s\n", en.Key, *en.Counter, en.Words)
		case en.Counter != nil:
			fmt.Fprintf(w, "  %-40s %d\n", en.Key, *en.Counter)
		case en.Value != nil:
			fmt.Fprintf(w, "  %-40s %s\n", en.Key, oneLine(en.Value))
		default:
			fmt.Fprintf(w, "  %-40s %q\n", en.Key, en.Text)
		}
	}
}

// writeActivation prints one activation and its forEach elements.
func writeActivation(w io.Writer, v *runtime.ActivationView, indent string) {
	line := fmt.Sprintf("%s%-*s %-9s", indent, max(1, 44-len(indent)), v.Act, v.State)
	if v.Attempts > 1 {
		line += fmt.Sprintf(" %d attempts", v.Attempts)
	}
	if v.Elements > 0 {
		counts := map[string]int{}
		for _, c := range v.Children {
			counts[c.State]++
		}
		var parts []string
		for _, state := range []string{"succeeded", "failed", "timeout", "canceled", "launched", "enqueued", "parked", "pending"} {
			if counts[state] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", counts[state], state))
			}
		}
		line += fmt.Sprintf(" forEach of %d: %s", v.Elements, strings.Join(parts, ", "))
	}
	if v.LedgerWords != "" {
		line += "  [" + v.LedgerWords + "]"
	}
	if v.Error != "" {
		line += "\n" + indent + "    error: " + firstLine(v.Error)
	}
	fmt.Fprintln(w, line)
	for _, c := range v.Children {
		writeActivation(w, c, indent+"  ")
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func oneLine(v json.RawMessage) string {
	s := strings.Join(strings.Fields(string(v)), " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

// jobArgs checks for exactly one JOB argument and opens the store; on
// failure it reports and returns a nil store with the exit code.
func jobArgs(e *env, fs *flag.FlagSet, name string, rest []string, open func(context.Context) (store.Store, error)) (runtime.JobID, store.Store, int) {
	if len(rest) != 1 {
		fmt.Fprintf(e.stderr, "flowgen %s: name exactly one job id\n\n", name)
		fs.Usage()
		return runtime.JobID{}, nil, exitUsage
	}
	job, err := runtime.ParseJobID(rest[0])
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen %s: %v\n", name, err)
		return job, nil, exitUsage
	}
	s, err := open(e.ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen %s: %v\n", name, err)
		return job, nil, exitUsage
	}
	return job, s, exitOK
}

// controlCommand builds kill, pause and resume.
func controlCommand(name, summary, extraArgs, what string, act func(e *runtime.Engine, env *env, job runtime.JobID, reason string) error) command {
	usage := fmt.Sprintf(controlUsage, name, extraArgs, what)
	return command{name, summary, usage, func(e *env, args []string) int {
		fs := newFlagSet(e, name, usage)
		open := storeFlag(fs)
		reason := fs.String("reason", "killed by an operator", "why (kill only; recorded on the tombstone)")
		rest, err := parseFlags(fs, args)
		if err != nil {
			return flagExit(err)
		}
		job, s, code := jobArgs(e, fs, name, rest, open)
		if s == nil {
			return code
		}
		defer s.Close()
		eng := runtime.New(s, runtime.Options{Owner: "flowgen-" + name, Visibility: time.Minute})
		if err := act(eng, e, job, *reason); err != nil {
			fmt.Fprintf(e.stderr, "flowgen %s: %v\n", name, err)
			if errors.Is(err, store.ErrNotFound) {
				return exitProblems
			}
			return exitUsage
		}
		return exitOK
	}}
}

func controlCommands() []command {
	return []command{
		controlCommand("kill", "kill a job from the top", " [--reason TEXT]", "Kill a job: every activation not yet run finishes canceled and the job ends killed.",
			func(eng *runtime.Engine, e *env, job runtime.JobID, reason string) error {
				return eng.Kill(e.ctx, job, reason)
			}),
		controlCommand("pause", "hold a job until it is resumed", "", "Pause a job: workers hand its messages back until it is resumed.",
			func(eng *runtime.Engine, e *env, job runtime.JobID, _ string) error { return eng.Pause(e.ctx, job) }),
		controlCommand("resume", "let a paused job continue", "", "Resume a paused job.",
			func(eng *runtime.Engine, e *env, job runtime.JobID, _ string) error { return eng.Resume(e.ctx, job) }),
		{"signal", "record a decision at a waiting checkpoint", signalUsage, runSignal},
	}
}

const signalUsage = `Usage: flowgen signal [--store PATH] (--approve | --reject) [--by NAME] [--note TEXT] JOB NODE

Records a human decision at the checkpoint node NODE of job JOB and resumes
the job: the checkpoint's input continues on its "approved" or "rejected"
port. A decision is final.

Exit status: 0 resumed, 1 no such job or no checkpoint NODE waiting, 2 usage or I/O error.

Flags:
`

func runSignal(e *env, args []string) int {
	fs := newFlagSet(e, "signal", signalUsage)
	open := storeFlag(fs)
	approve := fs.Bool("approve", false, "approve")
	reject := fs.Bool("reject", false, "reject")
	by := fs.String("by", os.Getenv("USER"), "who decides (recorded)")
	note := fs.String("note", "", "why (recorded)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if *approve == *reject || len(rest) != 2 {
		fmt.Fprint(e.stderr, "flowgen signal: give exactly one of --approve and --reject, a job and a node\n\n")
		fs.Usage()
		return exitUsage
	}
	job, s, code := jobArgs(e, fs, "signal", rest[:1], open)
	if s == nil {
		return code
	}
	defer s.Close()
	eng := runtime.New(s, runtime.Options{Owner: "flowgen-signal"})
	n, err := eng.Signal(e.ctx, job, rest[1], runtime.Decision{Approved: *approve, By: *by, Note: *note})
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen signal: %v\n", err)
		if errors.Is(err, store.ErrNotFound) {
			return exitProblems
		}
		return exitUsage
	}
	fmt.Fprintf(e.stdout, "resumed %d activation(s) of %s\n", n, rest[1])
	return exitOK
}
