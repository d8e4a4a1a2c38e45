package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
)

const jobsUsage = `Usage: flowgen jobs [--store PATH] [--state STATE] [--flow ID] [--since T] [--until T] [--where PATH=VALUE]... [--subflows] [--limit N] [--after JOB] [--json | -q]

Lists jobs, newest first, a page at a time: id, flow, state, start time,
how long it ran, and what it waits for. Filters combine:

  --state     running, waiting (at a checkpoint), paused, succeeded, failed or killed
  --flow      the flow's id
  --since     started at or after T, --until before T: RFC 3339
              (2026-11-23T10:00:00Z) or a duration back from now (90m, 24h)
  --where     a field of the job's input equals VALUE: customer.id=c_42
              (a dotted path; strings compare as text, other values as JSON)

When more jobs match than fit the page, the last line gives the command
for the next page. When flowgen serve owns the store, jobs asks it.

Exit status: 0 listed (even none), 2 usage or I/O error.

Flags:
`

// whereFlags collects repeated --where PATH=VALUE.
type whereFlags map[string]string

func (w whereFlags) String() string { return fmt.Sprint(map[string]string(w)) }
func (w whereFlags) Set(s string) error {
	path, value, ok := strings.Cut(s, "=")
	if !ok || path == "" {
		return fmt.Errorf("want PATH=VALUE, got %q", s)
	}
	w[path] = value
	return nil
}

// timeFlag is an RFC 3339 time or a duration back from now.
type timeFlag struct{ t *time.Time }

func (f timeFlag) String() string {
	if f.t == nil || f.t.IsZero() {
		return ""
	}
	return f.t.Format(time.RFC3339)
}

func (f timeFlag) Set(s string) error {
	if d, err := time.ParseDuration(s); err == nil {
		*f.t = time.Now().Add(-d)
		return nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return fmt.Errorf("want an RFC 3339 time (2026-11-23T10:00:00Z) or a duration (24h), got %q", s)
	}
	*f.t = t
	return nil
}

func runJobs(e *env, args []string) int {
	fs := newFlagSet(e, "jobs", jobsUsage)
	open := storeFlag(fs)
	var q runtime.JobQuery
	q.Where = whereFlags{}
	fs.StringVar(&q.State, "state", "", "keep jobs in this state")
	fs.StringVar(&q.Flow, "flow", "", "keep jobs of this flow")
	fs.Var(timeFlag{&q.Since}, "since", "keep jobs started at or after this time")
	fs.Var(timeFlag{&q.Until}, "until", "keep jobs started before this time")
	fs.Var(whereFlags(q.Where), "where", "keep jobs whose input field PATH equals VALUE (repeatable)")
	fs.BoolVar(&q.Subflows, "subflows", false, "include the jobs subflow nodes started")
	fs.IntVar(&q.Limit, "limit", 20, "jobs per page (at most 1000)")
	fs.StringVar(&q.After, "after", "", "the page after this job (as the previous page's last line says)")
	asJSON := fs.Bool("json", false, "print the page as JSON")
	quiet := fs.Bool("q", false, "print job ids only, one per line (for scripts: flowgen signal ... $(flowgen jobs -q --state waiting) NODE)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(rest) != 0 {
		fmt.Fprintf(e.stderr, "flowgen jobs: unexpected argument %q\n\n", rest[0])
		fs.Usage()
		return exitUsage
	}
	svc, done, err := open(e)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen jobs: %v\n", err)
		return exitUsage
	}
	defer done()
	list, err := svc.Jobs(e.ctx, q)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen jobs: %v\n", err)
		return exitUsage
	}
	if *asJSON {
		return writeJSON(e, list)
	}
	if *quiet {
		for _, j := range list.Jobs {
			fmt.Fprintln(e.stdout, j.Job)
		}
		return exitOK
	}
	if len(list.Jobs) == 0 {
		fmt.Fprintln(e.stderr, "flowgen jobs: no job matches")
		return exitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tFLOW\tSTATE\tSTARTED\tTOOK\tNOTE")
	for _, j := range list.Jobs {
		took := ""
		if !j.Finished.IsZero() {
			took = j.Finished.Sub(j.Started).Round(time.Millisecond).String()
		}
		var notes []string
		if len(j.Waiting) > 0 {
			notes = append(notes, "waits at "+strings.Join(j.Waiting, ", "))
		}
		if j.Paused {
			notes = append(notes, "paused")
		}
		if j.Errors > 0 {
			notes = append(notes, fmt.Sprintf("%d error(s)", j.Errors))
		}
		if j.Parent != "" {
			notes = append(notes, "subflow of "+j.Parent)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", j.Job, j.Flow, j.State, j.Started.Local().Format(time.DateTime), took, strings.Join(notes, "; "))
	}
	tw.Flush()
	if list.Next != "" {
		fmt.Fprintf(e.stderr, "more: flowgen jobs %s--after %s\n", pageArgs(args), list.Next)
	}
	return exitOK
}

// pageArgs repeats the arguments of this listing without --after.
func pageArgs(args []string) string {
	var keep []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--after" || a == "-after" {
			i++
			continue
		}
		if strings.HasPrefix(a, "--after=") || strings.HasPrefix(a, "-after=") {
			continue
		}
		keep = append(keep, a)
	}
	if len(keep) == 0 {
		return ""
	}
	return strings.Join(keep, " ") + " "
}
