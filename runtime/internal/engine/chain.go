package engine

import (
	"github.com/flowgen-dev/flowgen/runtime/ledger"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// A folded delivery whose steps publish exactly one next step of its job,
// a step that may fold too, publishes that step's message reserved to
// this worker (store.Tx.EnqueueReserved) and the batch takes it on in its
// next round, in the same transaction: the job's run of pure steps costs
// one claim and one commit, not one of each per step, and the message
// goes from published to done in that commit without anyone reserving it.
// Each chained step is a delivery like any other, with its own entry,
// ledger digits, fence and unit (a savepoint when the batch is careful);
// a chained step that does not commit with the batch goes on alone after
// the commit, its reservation already made. A crash before the commit
// undoes the whole chain, and the first step is delivered again; its
// nodes have no effects, so running them again changes nothing outside.
//
// Fan-out bodies, joins and undo steps do not chain: a fan-out's steps go
// to every worker, and the rounds of one batch stay short.

// chainRounds bounds how many of a job's steps one batch takes on in a
// row: its transaction holds its rows, and its other units wait for its
// commit, while the chain runs.
const chainRounds = 8

// chains reports whether next, the one step t published, may be taken on
// by t's batch.
func chains(c *compiled, t, next task) bool {
	return next.Flow == t.Flow && !next.Grouped && next.Kind == runtype.Step && foldsTask(c, next)
}

// admitChained enters the messages a round published reserved and
// returns their deliveries, and those of them that may fold.
func (e *Engine) admitChained(tx store.Tx, ms []store.Message) ([]*entry, []foldable, error) {
	var entered []*entry
	var folded []foldable
	for _, m := range ms {
		en, err := e.enterChained(tx, m)
		if err != nil {
			return nil, nil, err
		}
		entered = append(entered, en)
		if c, err := e.flow(en.t.Flow); err == nil && e.fold(c, en) {
			folded = append(folded, foldable{en, c})
		}
	}
	return entered, folded, nil
}

// enterChained is enter for a message this transaction published
// reserved, with nothing to read: EnqueueReserved fails the transaction
// if its id was ever published, so no delivery of it, and none of its
// activation (whose messages all have that id), has counted anything
// yet. The job was neither paused nor killed when the batch entered the
// step that published it, in this transaction; a pause or kill that
// commits meanwhile finds the chain done, as if it had committed just
// after the batch.
func (e *Engine) enterChained(tx store.Tx, m store.Message) (*entry, error) {
	en, err := decodeEntry(m)
	if err != nil {
		return nil, err
	}
	if err := tx.Bump(en.actKey(), ledger.Leg2Entry, ledger.MaxValue); err != nil {
		return nil, err
	}
	if err := e.judge(tx, en, false, false, ledger.Leg2Entry, 0); err != nil {
		return nil, err
	}
	return en, nil
}
