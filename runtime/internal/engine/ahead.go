package engine

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Running ahead. On a store with one writer (bbolt) a batch cannot fold a
// node into its transaction as PostgreSQL's does (fold.go): the node
// would hold every other commit up. A run of a job's steps onto nodes
// without effects can still share one commit. After a chained step's node
// ran, its worker predicts the one next step its commit will publish (a
// plain edge onto a node without effects), runs that node too, outside any
// transaction, and so on up to chainRounds. Then one commit takes them
// all. Each predicted step is entered from the message the commit
// published reserved, with its ledger digits and fence, checked against
// the prediction, and committed with the output computed ahead. The first
// reads pause and kill as any chained step (enterNext); each one after
// enters in the transaction that entered the step before it, unpaused and
// alive, and reads neither again (enterChained). The first step that differs
// (paused, killed, refused by its budget, another path) stops the run: it
// is entered and goes on alone after the commit, its node run again.
// Nothing that ran ahead has effects, so a prediction dropped, or a crash
// before the commit, changes nothing outside: the first step's message is
// delivered again and the run is redone.

// ranAhead is a predicted step, as the entry runAhead made to run its
// node: its task (t), when the node's call began (entered: the
// activation's time counts from there, not from its entry in the commit),
// and the result the node gave, sealed outside the commit (res, result,
// timerFired), or, when the attempt failed and is to be retried, the
// hand-back of the retry (later, built for the very message the commit
// publishes: its id and receipt follow from the job and the activation).
type ranAhead = *entry

// runAhead runs the nodes of the steps en's result leads to, while each
// is predictable, up to max of them. It stops at the first that does not
// succeed; an error is a crash point's or the end of ctx.
func (w *worker) runAhead(ctx context.Context, c *compiled, en *entry, res *result, max int) ([]ranAhead, error) {
	if w.caps.LocksRows || res == nil {
		return nil, nil
	}
	var out []ranAhead
	t, r := en.t, *res
	// The run commits under the lease the first step's entry holds: stop
	// starting nodes well before that lease could run out, and hold it
	// and the first step's message while the nodes run, as a call's
	// worker does (keepHold), so that no other delivery of the first step
	// runs them again meanwhile.
	until := w.writes.now().Add(w.opts.LeaseTTL / 4)
	stop, err := w.writes.keepHold(ctx, en, w.opts.LeaseTTL/4+w.longestTimeout(c))
	if err != nil {
		return nil, nil // the step goes on alone; its commit is fenced if the job moved on
	}
	defer stop()
	for range max {
		if w.writes.now().After(until) {
			break
		}
		next, ok := predictNext(c, t, r)
		if !ok {
			break
		}
		if err := w.hook.crash(runtype.CrashEntered); err != nil {
			return nil, err
		}
		id := protocol.MessageID(en.job, next.Act)
		ahead := &entry{t: next, job: en.job, lease: en.lease, c: c, folding: true, entered: w.writes.now(),
			m: store.Message{ID: id, Stream: runtype.WorkStream, Job: en.job[:], Attempt: 1,
				Receipt: store.Receipt{ID: id, Stream: runtype.WorkStream, Token: 1}}}
		got, err := w.proc.work(ctx, c, ahead)
		if errors.Is(err, errRetryLater) && ahead.later != nil && ctx.Err() == nil {
			out = append(out, ahead) // its retry commits with the run
			break
		}
		if err != nil || ctx.Err() != nil {
			break // the step goes on alone
		}
		if err := w.hook.crash(runtype.CrashWorked); err != nil {
			return nil, err
		}
		if _, err := w.writes.seal(ahead, &got); err != nil {
			break // the step goes on alone, and fails there
		}
		out = append(out, ahead)
		t, r = next, got
	}
	return out, nil
}

// longestTimeout is the longest a call of a task node of c may run.
func (w *worker) longestTimeout(c *compiled) time.Duration {
	longest := w.opts.Timeout
	for _, n := range c.byAlias {
		if n.Task != nil {
			longest = max(longest, n.Task.Info().Timeout)
		}
	}
	return longest
}

// predictNext returns the one step t's result r publishes, when that is
// a plain step onto a node that may run ahead (runsAheadTask): a task node's single
// edge, no loop.
func predictNext(c *compiled, t task, r result) (task, bool) {
	if (t.Kind != protocol.Entry && t.Kind != protocol.Step) || r.Failed() {
		return task{}, false
	}
	n := c.byAlias[t.Node]
	if n == nil || n.Task == nil || n.ForEach != nil || n.Subflow != nil || n.Checkpoint != nil || n.Sleep != nil {
		return task{}, false
	}
	edges := c.out[t.Node]
	if len(edges) != 1 || edges[0].MaxIterations > 0 {
		return task{}, false
	}
	ed := edges[0]
	next := task{Kind: protocol.Step, Flow: t.Flow, Node: ed.To, Dim: t.Dim, Input: r.Output, Delivery: ed.Delivery,
		DedupeTTL: ed.DedupeTTL, Via: t.Node + "." + ed.FromPort, Partition: ed.PartitionKey,
		Act: runtype.StepOf(ed.To, t.Dim, t.Node).String(), Started: t.Started}
	return next, runsAheadTask(c, next)
}

// ranAs reports whether the entered chained step en is the step a
// predicted, with nothing about it that would make its node's work
// differ: same node, input, edge and delivery, a first attempt of a fresh
// activation in a job neither paused nor killed, within its budget.
func (w *worker) ranAs(en *entry, a ranAhead) bool {
	if en == nil {
		return false
	}
	t, p := en.t, a.t
	return !en.deferred && !en.killed && en.exhausted == "" && en.m.Attempt == 1 &&
		!en.guid.WorkDone() && !en.guid.ChildrenSpawned() &&
		t.Act == p.Act && t.Kind == p.Kind && t.Flow == p.Flow && t.Node == p.Node && t.Dim == p.Dim && bytes.Equal(t.Input, p.Input) &&
		t.Delivery == p.Delivery && t.DedupeTTL == p.DedupeTTL && t.Via == p.Via && t.Partition == p.Partition &&
		t.InputRef == "" && t.Resume == "" && t.Failed == "" && t.Wake == 0 &&
		t.Refused == "" && overdue(t, w.writes.now()) == ""
}

// commitAhead takes on, in tx, the chained step next that the steps
// commit of the run's previous step entered, and the ones after it, with
// the results run ahead; it returns the entries it committed and the
// first chained step it did not (nil when none is left).
func (w *worker) commitAhead(tx store.Tx, c *compiled, next *entry, ahead []ranAhead) ([]*entry, *entry, error) {
	var done []*entry
	for _, a := range ahead {
		if next == nil || !w.ranAs(next, a) {
			break
		}
		if a.later != nil { // the attempt failed and is retried later
			if err := w.writes.handBackIn(tx, a); err != nil {
				return nil, nil, err
			}
			return done, nil, nil
		}
		res := *a.res // fn may run again
		next.entered = a.entered
		next.result, next.res, next.timerFired, next.foreseen = a.result, &res, a.timerFired, a.foreseen
		var err error
		if next.steps, err = w.writes.commitResult(tx, c, next, &res, true); err != nil {
			return nil, nil, err
		}
		done = append(done, next)
		var after *entry
		if p := next.steps.next; p != nil {
			// next entered in this transaction, neither paused nor killed
			// (ranAs): the step it published enters with nothing to read.
			if after, err = w.writes.enterChained(tx, *p); err != nil {
				return nil, nil, err
			}
		}
		next = after
	}
	return done, next, nil
}
