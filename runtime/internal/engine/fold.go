package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// A Pure node needs no durable "launched" marker before its call: if the
// worker dies during the call, running it again changes nothing outside,
// and the call needs nothing outside either. On a store that locks rows,
// such a delivery folds its entry commit into its steps commit: the
// reservation, the entry, the call and steps 1-3 are one transaction, one
// commit. The reserved message stays locked meanwhile, so no other worker
// takes it; a crash rolls everything back and the message is delivered
// again, as if it had never been reserved. A ReadOnly node never folds,
// though it has no effects: its call waits on the outside world (an HTTP
// read, a query), for as long as the provider takes, and no transaction
// may stay open, holding row locks and a connection, meanwhile.
//
// A delivery folds only on its first pass (no step done yet), and never
// for a killed job, an undo, a join or a node that parks or fans out. When
// its entry took or renewed the job's lease, that row stays locked until
// the batch commits: the job's other deliveries in flight wait at their
// fence until then, before they lock anything the batch needs.

// fold reports whether the delivery en may run inside its own entry
// transaction.
func (w *worker) fold(c *compiled, en *entry) bool {
	if !w.caps.LocksRows || en.deferred || en.killed || en.guid.WorkDone() || en.guid.ChildrenSpawned() {
		return false
	}
	return foldsTask(c, en.t)
}

// foldsTask reports whether t's activation, on its first pass, may run
// inside the transaction that delivers it: its node is Pure, and it does
// not park, fan out or undo.
func foldsTask(c *compiled, t task) bool {
	info, ok := plainTask(c, t)
	return ok && info.Effects == flowtype.Pure
}

// runsAheadTask reports whether t's activation, on its first pass, may
// run ahead of its entry, outside any transaction (ahead.go): its node
// has no effects (Pure or ReadOnly), and it does not park, fan out or
// undo.
func runsAheadTask(c *compiled, t task) bool {
	info, ok := plainTask(c, t)
	return ok && (info.Effects == flowtype.Pure || info.Effects == flowtype.ReadOnly)
}

// plainTask returns the node of t when t is a plain call of it: not an
// undo or a join, a task node that does not park, fan out or branch,
// without a rate limit (its token is taken in a commit of its own,
// ratelimit.go).
func plainTask(c *compiled, t task) (runtype.NodeInfo, bool) {
	if t.Kind == protocol.Undo || t.Kind == protocol.Join {
		return runtype.NodeInfo{}, false
	}
	n := c.byAlias[t.Node]
	if n == nil || n.Task == nil || n.Subflow != nil || n.Checkpoint != nil || n.ForEach != nil || n.Switch != nil {
		return runtype.NodeInfo{}, false
	}
	info := n.Task.Info()
	return info, info.RateLimit.QPS == 0
}

// foldable is a delivery that fold accepted, with its flow.
type foldable struct {
	en *entry
	c  *compiled
}

// runFolded runs the folded deliveries of a batch inside tx, the
// transaction that reserved them, in rounds (runRound); each round takes
// on the next steps the one before published reserved (chain.go). It
// returns the fan-out shards the units completed, for the transaction to
// count last (gatherAll), and the deliveries the chained steps entered.
func (w *worker) runFolded(ctx context.Context, tx store.Tx, folded []foldable, careful bool) ([]*gather, []*entry, error) {
	var gathers []*gather
	var chained []*entry
	for round := 1; len(folded) > 0; round++ {
		g, next, err := w.runRound(ctx, tx, folded, careful, round < chainRounds)
		if err != nil {
			return nil, nil, err
		}
		gathers = append(gathers, g...)
		var ens []*entry
		ens, folded, err = w.admitChained(tx, next)
		if err != nil {
			return nil, nil, err
		}
		chained = append(chained, ens...)
	}
	return gathers, chained, nil
}

// runRound runs folded deliveries inside tx: their calls run
// concurrently, then each commits its steps (or the hand-back of a retry)
// as a unit of its own. With chain set, a unit whose steps publish one
// next step that may fold publishes it reserved (see chain.go); runRound
// returns those messages, with the fan-out shards the units completed.
//
// A unit rarely fails (a fenced lease, a write-once conflict, a ledger
// ceiling), so a batch first runs its units without savepoints: their
// writes wait in the transaction and travel with the next statement or the
// commit, and a batch of pure steps costs no round trip and no
// subtransaction per unit. A failure there fails the batch, and the
// caller claims again carefully: each unit inside a savepoint of its own
// (store.Capabilities.Savepoints), so a unit that fails is undone alone and its
// delivery goes on unfolded after the batch commits, like those that
// never folded. In that mode only a crash point or the end of ctx fails
// the whole batch.
func (w *worker) runRound(ctx context.Context, tx store.Tx, folded []foldable, careful, chain bool) ([]*gather, []publishedStep, error) {
	for _, f := range folded {
		if err := w.hook.crash(runtype.CrashEntered); err != nil {
			return nil, nil, err
		}
		f.en.folding = true
	}
	outcomes := w.callFolded(ctx, folded)
	var gathers []*gather
	var next []publishedStep
	for i, f := range folded {
		en := f.en
		en.folding = false
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		unit, err := w.foldedUnit(f, outcomes[i], chain)
		if err != nil || unit == nil {
			if err != nil {
				return nil, nil, err
			}
			continue
		}
		if !careful {
			if err := unit(tx); err != nil {
				return nil, nil, fmt.Errorf("%s, folded without a savepoint: %w", en.t.Act, err)
			}
		} else if err := tx.Atomically(unit); err != nil {
			en.stepped, en.steps = false, stepsOutcome{}
			w.log.Warn("a folded delivery did not commit with its batch; it goes on alone", "act", en.t.Act, "err", err)
			continue
		}
		en.later, en.deferred = nil, !en.stepped // a hand-back needs nothing more
		if en.steps.gather != nil {
			gathers = append(gathers, en.steps.gather)
		}
		if en.steps.next != nil {
			next = append(next, *en.steps.next)
		}
	}
	return gathers, next, nil
}

// foldedCall is what a folded delivery's call came to.
type foldedCall struct {
	res result
	err error
}

// callFolded runs the calls of folded's deliveries, concurrently.
func (w *worker) callFolded(ctx context.Context, folded []foldable) []foldedCall {
	calls := make([]foldedCall, len(folded))
	call := func(i int) {
		calls[i].res, calls[i].err = w.proc.work(ctx, folded[i].c, folded[i].en)
	}
	if len(folded) == 1 {
		call(0)
		return calls
	}
	var wg sync.WaitGroup
	for i := range folded {
		wg.Go(func() { call(i) })
	}
	wg.Wait()
	return calls
}

// foldedUnit is the unit f's call commits in its batch's transaction:
// its steps, or the hand-back of a retry; nil when the delivery goes on
// alone after the batch commits.
func (w *worker) foldedUnit(f foldable, c foldedCall, chain bool) (func(store.Tx) error, error) {
	en := f.en
	switch {
	case errors.Is(c.err, errRetryLater) && en.later != nil:
		return func(tx store.Tx) error { return w.writes.handBackIn(tx, en) }, nil
	case c.err != nil:
		w.log.Warn("a folded delivery goes on alone", "act", en.t.Act, "err", c.err)
		return nil, nil
	}
	if err := w.hook.crash(runtype.CrashWorked); err != nil {
		return nil, err
	}
	return func(tx store.Tx) (err error) {
		en.steps, err = w.writes.commitResult(tx, f.c, en, &c.res, chain)
		en.stepped = err == nil
		return err
	}, nil
}
