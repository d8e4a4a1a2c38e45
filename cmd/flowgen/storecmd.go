package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/serve/localrun"
)

const storeUsage = `Usage: flowgen store [--store PATH] [--retention D] [--json] sweep
       flowgen store [--store PATH] compact

Maintains a job store:

  sweep    delete what retention lets go of now, in bounded commits:
           finished jobs past their retention, with their state, history,
           job key and lease; dedupe records and cache entries past their
           TTL; stored inputs no job refers to; acknowledged message ids
           older than --retention; then, on PostgreSQL, VACUUM the
           store's tables so the space is reused. A job's retention is
           fixed when it finishes (its flow's policies.retention, else the worker's
           --retention then). Workers (flowgen worker, serve, run) sweep
           every minute by themselves; sweep is for a store no worker
           runs on.
  compact  rewrite a bbolt store file with only its live pages: a bbolt
           file reuses freed pages but never shrinks. No process may have
           the store open (stop flowgen serve and workers first); the file
           is replaced only once the copy is complete and synced.
           PostgreSQL reclaims space itself (autovacuum).

Exit status: 0 done, 2 usage or I/O error (a store in use, say).

Flags:
`

func runStore(e *env, args []string) int {
	fs := newFlagSet(e, "store", storeUsage)
	path := fs.String("store", "", storeFlagHelp)
	retention := fs.Duration("retention", localrun.DefaultRetention, "forget acknowledged message ids older than this (negative: never)")
	asJSON := fs.Bool("json", false, "print what sweep deleted as JSON")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	usage := func(format string, args ...any) int {
		fmt.Fprintf(e.stderr, "flowgen store: "+format+"\n\n", args...)
		fs.Usage()
		return exitUsage
	}
	if len(rest) != 1 {
		return usage("name one action: sweep or compact")
	}
	spec := resolveStore(e, *path)
	switch rest[0] {
	case "sweep":
		return sweepStore(e, spec, *retention, *asJSON)
	case "compact":
		if localrun.IsDatabaseURL(spec) {
			return usage("compact is for bbolt files; PostgreSQL reclaims space itself")
		}
		before, after, err := boltstore.Compact(spec, 0)
		if err != nil {
			fmt.Fprintf(e.stderr, "flowgen store compact: %v\n", err)
			if errors.Is(err, boltstore.ErrLocked) {
				fmt.Fprintf(e.stderr, "flowgen store compact: stop the flowgen serve or worker that has it open, then compact\n")
			}
			return exitUsage
		}
		fmt.Fprintf(e.stdout, "compacted %s: %s -> %s\n", spec, byteSize(before), byteSize(after))
		return exitOK
	default:
		return usage("unknown action %q: want sweep or compact", rest[0])
	}
}

// sweepStore runs one sweep of the store with the given default retention.
func sweepStore(e *env, spec string, retention time.Duration, asJSON bool) int {
	st, err := localrun.OpenStore(e.ctx, spec, false)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen store sweep: %v\n", err)
		if errors.Is(err, boltstore.ErrLocked) {
			fmt.Fprintf(e.stderr, "flowgen store sweep: the flowgen serve or worker that has it open sweeps it every minute\n")
		}
		return exitUsage
	}
	defer st.Close()
	sw, err := engine.New(st, engine.Options{Owner: "flowgen-store-sweep", Retention: retention, SweepEvery: -1}).Sweep(e.ctx)
	if err == nil && sw.Jobs+sw.Records+sw.Blobs+sw.Acked > 0 {
		err = st.Reclaim(e.ctx) // workers do it after their sweeps
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen store sweep: %v\n", err)
		return exitUsage
	}
	if asJSON {
		out, _ := json.MarshalIndent(sw, "", "  ")
		fmt.Fprintln(e.stdout, string(out))
		return exitOK
	}
	if sw.Busy {
		fmt.Fprintln(e.stdout, "another process is sweeping the store; nothing done")
		return exitOK
	}
	fmt.Fprintf(e.stdout, "swept %s: %d jobs, %d expired records, %d blobs, %d acknowledged message ids\n", spec, sw.Jobs, sw.Records, sw.Blobs, sw.Acked)
	return exitOK
}

// byteSize prints n bytes in KiB or MiB.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
