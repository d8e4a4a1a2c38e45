package main

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/serve/jobapi"
)

const dlqUsage = `Usage: flowgen dlq [--store PATH] [--json] list
       flowgen dlq [--store PATH] [--json] show ID
       flowgen dlq [--store PATH] requeue ID...
       flowgen dlq [--store PATH] [--reason TEXT] fail ID...

Operates the dead-letter stream: the messages no worker can take on (a
task that does not decode, a flow no worker of the store has). Each holds
its job up until an operator acts on it:

  list     every dead letter, oldest first: id, job, activation, when, why
  show     one dead letter in full, with its activation's input
  requeue  put it back on the work stream as a new message with a fresh
           delivery budget (after deploying its flow, say)
  fail     fail its activation as DeadLettered: the job goes on by its
           error policy, compensating if it fails (a worker that has the
           job's flow takes it)

requeue and fail are idempotent: asked again, they print the same new
message id and change nothing. A dead letter requeued cannot be failed,
nor the other way round. An activation that can never make progress (a
node that crashes its worker every time, a ledger at its ceiling) is not
dead-lettered: it fails as Exhausted and its job goes on by its policy.

When flowgen serve owns the store, the command goes through it;
otherwise it opens the store itself.

Exit status: 0 done, 1 no such dead letter (or taken the other way,
or undecodable for fail), 2 usage or I/O error.

Flags:
`

func runDLQ(e *env, args []string) int {
	fs := newFlagSet(e, "dlq", dlqUsage)
	open := storeFlag(fs)
	asJSON := fs.Bool("json", false, "print list and show as JSON")
	reason := fs.String("reason", "failed by an operator", "why, for fail (recorded in the activation's error)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	usage := func(format string, args ...any) int {
		fmt.Fprintf(e.stderr, "flowgen dlq: "+format+"\n\n", args...)
		fs.Usage()
		return exitUsage
	}
	if len(rest) == 0 {
		return usage("name an action: list, show, requeue or fail")
	}
	action, ids := rest[0], rest[1:]
	switch {
	case action != "list" && action != "show" && action != "requeue" && action != "fail":
		return usage("unknown action %q: want list, show, requeue or fail", action)
	case action == "list" && len(ids) != 0:
		return usage("list takes no arguments")
	case action == "show" && len(ids) != 1:
		return usage("show takes exactly one dead letter id")
	case action != "list" && len(ids) == 0:
		return usage("%s takes dead letter ids", action)
	}
	parsed := make([]runtime.MessageID, len(ids))
	for i, s := range ids {
		if parsed[i], err = runtime.ParseMessageID(s); err != nil {
			return usage("%v", err)
		}
	}
	svc, done, err := open(e)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen dlq: %v\n", err)
		return exitUsage
	}
	defer done()
	switch action {
	case "list", "show":
		return showDeadLetters(e, svc, parsed, *asJSON)
	}
	code := exitOK
	for _, id := range parsed {
		var next runtime.MessageID
		if action == "requeue" {
			next, err = svc.RequeueDeadLetter(e.ctx, id)
		} else {
			next, err = svc.FailDeadLetter(e.ctx, id, *reason)
		}
		if err != nil {
			code = max(code, dlqError(e, action, err))
			continue
		}
		fmt.Fprintf(e.stdout, "%s: %s as message %s\n", id, map[string]string{"requeue": "requeued", "fail": "failed"}[action], next)
	}
	if _, remote := svc.(*jobapi.Client); !remote && code == exitOK {
		fmt.Fprintf(e.stderr, "flowgen dlq: no flowgen serve owns the store: the message runs when workers for its flow run (flowgen serve, worker or run)\n")
	}
	return code
}

// dlqError reports an action's error: 1 for what is about the dead
// letter (none, taken the other way, undecodable), 2 otherwise.
func dlqError(e *env, action string, err error) int {
	code := jobError(e, "dlq "+action, err)
	if errors.Is(err, runtime.ErrDeadLetterTaken) || errors.Is(err, runtime.ErrUndecodable) {
		return exitProblems
	}
	return code
}

// showDeadLetters prints every dead letter (no ids) or the one named.
func showDeadLetters(e *env, svc jobapi.Service, ids []runtime.MessageID, asJSON bool) int {
	list, err := svc.DeadLetters(e.ctx)
	if err != nil {
		return dlqError(e, "list", err)
	}
	if len(ids) == 0 {
		if asJSON {
			return writeJSON(e, list)
		}
		if len(list) == 0 {
			fmt.Fprintln(e.stdout, "no dead letters")
			return exitOK
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tJOB\tACTIVATION\tDEAD SINCE\tREASON")
		for _, d := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.ID, d.Job, orUnknown(d.Act), d.At.UTC().Format(time.DateTime), d.Reason)
		}
		tw.Flush()
		return exitOK
	}
	for _, d := range list {
		if d.ID != ids[0] {
			continue
		}
		if asJSON {
			return writeJSON(e, d)
		}
		fmt.Fprintf(e.stdout, "dead letter %s\n  job:         %s\n  activation:  %s (flow %s, node %s)\n  delivered:   %d time(s)\n  dead since:  %s\n  reason:      %s\n",
			d.ID, d.Job, orUnknown(d.Act), orUnknown(d.Flow), orUnknown(d.Node), d.Attempts, d.At.UTC().Format(time.RFC3339), d.Reason)
		if d.Input != nil {
			fmt.Fprintf(e.stdout, "  input:       %s\n", d.Input)
		}
		return exitOK
	}
	fmt.Fprintf(e.stderr, "flowgen dlq show: no dead letter %s\n", ids[0])
	return exitProblems
}

// orUnknown is s, or a word for a field an undecodable task left empty.
func orUnknown(s string) string {
	if s == "" {
		return "(undecodable)"
	}
	return s
}
