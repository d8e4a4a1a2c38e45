package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// A node without effects (Pure or ReadOnly) needs no durable "launched"
// marker before its call: if the worker dies during the call, running it
// again changes nothing outside. On a store that locks rows, such a
// delivery folds its entry commit into its steps commit: the reservation,
// the entry, the call and steps 1-3 are one transaction, one commit. The
// reserved message stays locked meanwhile, so no other worker takes it;
// a crash rolls everything back and the message is delivered again, as if
// it had never been reserved.
//
// A delivery folds only on its first pass (no step done yet), only when
// the entry did not have to write the lease row (a heartbeat renewal in
// its own transaction would wait on that row until this one commits), and
// never for a killed job, an undo, a join or a node that parks or fans out.

// fold reports whether the delivery en may run inside its own entry
// transaction.
func (e *Engine) fold(c *compiled, en *entry) bool {
	if !e.rowLocking || en.deferred || en.acquired || en.killed || en.guid.WorkDone() || en.guid.ChildrenSpawned() {
		return false
	}
	if en.t.Kind == runtype.Undo || en.t.Kind == runtype.Join {
		return false
	}
	n := c.byAlias[en.t.Node]
	if n == nil || n.Task == nil || n.Subflow != nil || n.Checkpoint != nil || n.ForEach != nil || n.Switch != nil {
		return false
	}
	effects := n.Task.Info().Effects
	return effects == flowtype.Pure || effects == flowtype.ReadOnly
}

// proceedFolded is proceed inside the entry transaction tx, for a delivery
// that fold accepted. It reports whether the steps committed with the
// entry and closed the job; a retry leaves only its hand-back in tx.
func (e *Engine) proceedFolded(ctx context.Context, tx store.Tx, c *compiled, en *entry) (stepped, closed bool, err error) {
	if err := e.crash(runtype.CrashEntered); err != nil {
		return false, false, err
	}
	en.folded = tx
	defer func() { en.folded = nil }()
	res, err := e.proc.work(ctx, c, en)
	if errors.Is(err, errRetryLater) {
		return false, false, nil // the hand-back commits with the entry
	}
	if errors.Is(err, errParked) || errors.Is(err, errStartChild) {
		return false, false, fmt.Errorf("%s: a folded node cannot park", en.t.Act)
	}
	if err != nil {
		return false, false, err
	}
	if err := e.crash(runtype.CrashWorked); err != nil {
		return false, false, err
	}
	closed, err = e.commitResult(tx, c, en, &res)
	return err == nil, closed, err
}
