package engine

import (
	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/ledger"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// A steps commit that publishes exactly one next step of its job publishes
// that step's message reserved to its own worker (store.Tx.EnqueueReserved)
// and enters it in the same commit, and the worker takes it on next
// without claiming it: a linear run of steps costs no claim, and no entry
// commit, per step after the first. Each chained step is a delivery like
// any other, with its own entry, ledger digits and fence, and its entry
// commits before its node runs, so an Effectful node still has its durable
// "launched" marker first. A crash after the commit leaves the step
// reserved, and it is delivered again when its visibility runs out.
//
// In a folding batch (fold.go) a chained step that may fold runs in the
// batch's next round, in the same transaction: a run of pure steps of one
// job costs one claim and one commit, and each chained message goes from
// published to done in that commit without anyone reserving it. A
// chained step that does not fold, or does not commit with the batch,
// goes on alone after the commit, its reservation already made. A crash
// before the commit undoes the whole chain, and the first step is
// delivered again; its nodes have no effects, so running them again
// changes nothing outside.
//
// Fan-out bodies, joins and undo steps do not chain: a fan-out's steps go
// to every worker.

// chainRounds bounds how many of a job's steps a worker takes on in a row
// (and a folding batch in its transaction, which holds its rows while the
// chain runs), so that one long job does not keep its worker from the
// others' work.
const chainRounds = 8

// chains reports whether next, the one step t published, may be taken on
// by t's worker.
func chains(t, next task) bool {
	return next.Flow == t.Flow && next.Kind == protocol.Step
}

// admitChained enters the messages a round published reserved and
// returns their deliveries, and those of them that fold into the next
// round. A step that does not fold runs after the batch commits, when the
// job may have been paused or killed: those enter with one read for all
// of them, as any entry does (admit).
func (w *worker) admitChained(tx store.Tx, ps []publishedStep) ([]*entry, []foldable, error) {
	var entered []*entry
	var folded []foldable
	var later []publishedStep
	for _, p := range ps {
		c, err := w.writes.flows.flow(p.t.Flow)
		if err != nil || !foldsTask(c, p.t) {
			later = append(later, p)
			continue
		}
		en, err := w.writes.enterChained(tx, p)
		if err != nil {
			return nil, nil, err
		}
		entered = append(entered, en)
		if w.fold(c, en) {
			folded = append(folded, foldable{en, c})
		}
	}
	// One read enters them all; a handed-back one is a deferred entry,
	// which the batch skips.
	ens, _, err := w.admitPublished(tx, later)
	if err != nil {
		return nil, nil, err
	}
	return append(entered, ens...), folded, nil
}

// admitPublished is admit of steps this worker published reserved, whose
// tasks it has.
func (w *worker) admitPublished(tx store.Tx, ps []publishedStep) ([]*entry, []foldable, error) {
	if len(ps) == 0 {
		return nil, nil, nil
	}
	ms, ens, errs := make([]store.Message, len(ps)), make([]*entry, len(ps)), make([]error, len(ps))
	for i, p := range ps {
		ms[i], ens[i] = p.m, entryOf(p)
		ens[i].came = Chained
	}
	ens, errs = w.writes.enterEntries(tx, ens, errs)
	return w.admitted(tx, ms, ens, errs)
}

// enterChained is enter for a message this transaction published
// reserved, with nothing to read: EnqueueReserved fails the transaction
// if its id was ever published, so no delivery of it, and none of its
// activation (whose messages all have that id), has counted anything
// yet. The job was neither paused nor killed when the batch entered the
// step that published it, in this transaction; a pause or kill that
// commits meanwhile finds the chain done, as if it had committed just
// after the batch.
func (pw *protocolWriter) enterChained(tx store.Tx, p publishedStep) (*entry, error) {
	en := entryOf(p)
	en.came = Chained
	if err := tx.Bump(en.actKey(), ledger.Leg2Entry, ledger.MaxValue); err != nil {
		return nil, err
	}
	if err := pw.judge(tx, en, false, false, ledger.Leg2Entry, 0); err != nil {
		return nil, err
	}
	return en, nil
}

// enterNext enters, in the steps commit that published it reserved, the
// next step a delivery taken on after its batch's commit chained: its
// node ran outside any transaction, so the job may have been paused or
// killed meanwhile, and the entry reads as any entry does (admit). It
// returns nil when the step does not enter (handed back, poison).
func (w *worker) enterNext(tx store.Tx, p publishedStep) (*entry, error) {
	ens, _, err := w.admitPublished(tx, []publishedStep{p})
	if err != nil || len(ens) == 0 || ens[0].deferred {
		return nil, err
	}
	return ens[0], nil
}
