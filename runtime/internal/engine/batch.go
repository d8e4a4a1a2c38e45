package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Step processes at most one message and reports whether it found one: a
// batch of one (see StepBatch).
func (e *Engine) Step(ctx context.Context) (bool, error) {
	n, err := e.StepBatch(ctx, 1)
	return n > 0, err
}

// StepBatch claims up to max ready messages in one transaction, takes
// each through the step protocol and reports how many it claimed. The
// reservations, job leases and entry counts of the whole batch are one
// commit. On a store whose transactions lock rows and have savepoints,
// the deliveries that may fold (fold.go) also run their nodes and commit
// their steps in that transaction, each as a unit of its own, so one that
// fails undoes nothing of the others: one commit for the whole batch. The
// other deliveries go on after the commit, concurrently, each with its own
// commits.
func (e *Engine) StepBatch(ctx context.Context, max int) (int, error) {
	return e.worker.stepBatch(ctx, max, limits{})
}

// limits bound what the workers of one Run do at once; nil channels bound
// nothing.
type limits struct {
	// claims is taken by a batch from its claim to its commit: a few
	// claiming transactions at a time per process keep PostgreSQL from
	// walking the same ready rows, locked by each other, for every worker
	// (River's single fetcher per process, with room for one batch to
	// claim while another runs its nodes).
	claims chan struct{}
	// slots is taken by each delivery that goes on after its batch's
	// commit (see proceedAll).
	slots chan struct{}
	// wake is passed when a commit published work its own process should
	// take on (next steps kept for the job's lease holder, of which the
	// store tells no one); nil wakes no one.
	wake *baton
}

// claimers is how many workers of a process claim at once.
const claimers = 2

// limits are the bounds of a Run with the given number of workers. Only
// a store whose transactions lock rows needs them: there, concurrent
// transactions contend for rows and connections. A store with one writer
// (bbolt) queues concurrent Updates and commits each queue as one
// transaction (group commit), so the more deliveries are in flight the
// more each commit carries: its workers claim at will, and every claimed
// delivery goes on at once (at most workers × Options.Batch in flight).
func (w *worker) limits(workers int) limits {
	if !w.caps.LocksRows {
		return limits{}
	}
	return limits{claims: make(chan struct{}, claimers), slots: make(chan struct{}, max(workers, 1))}
}

// stepBatch is StepBatch under lim.
func (w *worker) stepBatch(ctx context.Context, max int, lim limits) (int, error) {
	if w.caps.ExpensiveCommits {
		ready, err := w.store.Ready(ctx, runtype.WorkStream)
		if err != nil {
			return 0, fmt.Errorf("peek: %w", err)
		}
		if !ready {
			return 0, nil // no write transaction to learn there is no work
		}
	}
	if lim.claims != nil {
		select {
		case lim.claims <- struct{}{}:
		case <-ctx.Done():
			return 0, nil
		}
	}
	var claimed int
	var entered []*entry
	var optimistic bool
	try := func(careful bool) error {
		return w.store.Update(ctx, func(tx store.Tx) error {
			var err error
			claimed, entered, optimistic, err = w.claim(ctx, tx, max, careful) // fn may run again
			return err
		})
	}
	err := try(false)
	if err != nil && optimistic && ctx.Err() == nil && !w.hook.hasCrashed() {
		// A unit folded without a savepoint failed, or one of its writes
		// was refused at the commit: nothing of the batch committed. Claim
		// again with a savepoint around each unit, so that only the unit
		// that fails is undone.
		w.log.Info("a batch folded without savepoints failed; claiming again with them", "err", err)
		err = try(true)
	}
	if lim.claims != nil {
		<-lim.claims
	}
	if err != nil {
		return 0, fmt.Errorf("reserve: %w", err)
	}
	w.metrics.countEntered(entered)
	var alone []*entry
	for _, en := range entered {
		switch {
		case en.stepped:
			lim.published(en)
			if err := w.stepsCommitted(en, Folded); err != nil {
				return claimed, err
			}
		case !en.deferred:
			alone = append(alone, en)
		}
	}
	return claimed, w.proceedAll(ctx, alone, lim)
}

// published wakes a worker of the process when en's committed steps
// published next steps for it.
func (lim limits) published(en *entry) {
	if en.steps.published && lim.wake != nil {
		lim.wake.pass()
	}
}

// claim reserves up to max messages in tx, enters each and runs the
// deliveries that fold; it returns how many it reserved, the entries made
// and whether it folded any without savepoints (see runFolded). An empty
// stream is not a failed transaction: failing would make a
// group-committing backend roll back and rerun its whole batch.
func (w *worker) claim(ctx context.Context, tx store.Tx, max int, careful bool) (int, []*entry, bool, error) {
	ms, err := w.writes.reserve(tx, max)
	if errors.Is(err, store.ErrEmpty) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, err
	}
	entered, folded, err := w.admit(tx, ms)
	if err != nil {
		return 0, nil, false, err
	}
	if !w.caps.Savepoints || len(folded) == 0 {
		return len(ms), entered, false, nil
	}
	slices.SortStableFunc(folded, lockOrder)
	gathers, chained, err := w.runFolded(ctx, tx, folded, careful)
	if err != nil {
		return 0, nil, !careful, err
	}
	entered = append(entered, chained...)
	// The completed shards count last, in one order (see gather); a
	// failure here fails the batch, whose units counted them.
	if err := w.writes.gatherAll(tx, gathers); err != nil {
		return 0, nil, !careful, err
	}
	return len(ms), entered, !careful, nil
}

// admit enters the reserved messages ms in tx and returns the deliveries
// that entered, and those of them that may fold; a poison message goes to
// the dead-letter stream. An error fails the transaction.
func (w *worker) admit(tx store.Tx, ms []store.Message) ([]*entry, []foldable, error) {
	if len(ms) == 0 {
		return nil, nil, nil
	}
	ens, errs := w.writes.enterAll(tx, ms)
	return w.admitted(tx, ms, ens, errs)
}

// admitted is admit of the messages ms once entered (ens and errs at
// their indexes).
func (w *worker) admitted(tx store.Tx, ms []store.Message, ens []*entry, errs []error) ([]*entry, []foldable, error) {
	var entered []*entry
	var folded []foldable
	for i, en := range ens {
		if err := errs[i]; errors.Is(err, errPoison) {
			if err := w.writes.deadLetter(tx, ms[i], err); err != nil {
				return nil, nil, err
			}
			continue
		} else if err != nil {
			return nil, nil, err
		}
		entered = append(entered, en)
		if w.fold(en.c, en) {
			folded = append(folded, foldable{en, en.c})
		}
	}
	return entered, folded, nil
}

// proceedEntered takes en on from an entry committed before its worker
// had it (a batch's claim, a start): the crash point between the two, then
// proceed with chaining.
func (w *worker) proceedEntered(ctx context.Context, en *entry, lim limits) error {
	if err := w.hook.crash(runtype.CrashReserved); err != nil {
		return err
	}
	return w.proceed(ctx, en, lim, true)
}

// proceedAll takes entered deliveries on from their committed entry,
// concurrently, and returns their errors joined. Each takes one of the slots
// while it runs: Run gives all its workers one set, one slot per worker,
// so a process never has more deliveries in flight outside their batches
// than it has workers, however many each worker claimed (and PostgreSQL
// does not drown in concurrent transactions).
func (w *worker) proceedAll(ctx context.Context, entered []*entry, lim limits) error {
	slots := lim.slots
	one := func(en *entry) error { return w.proceedEntered(ctx, en, lim) }
	if len(entered) == 1 && slots == nil {
		return one(entered[0])
	}
	errs := make([]error, len(entered))
	var wg sync.WaitGroup
	for i, en := range entered {
		if slots != nil {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err() // redelivered once its visibility runs out
				continue
			}
		}
		wg.Go(func() {
			errs[i] = one(en)
			if slots != nil {
				<-slots
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
