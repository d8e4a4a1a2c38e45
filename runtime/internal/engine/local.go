package engine

import (
	"context"
	"sync"

	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Starting where the job starts. On a store with one writer (bbolt), a
// job started while this engine's Run works has its entry activations
// published reserved to this engine (store.Tx.EnqueueReserved) and
// entered in the start's own commit, and the Run takes them on at once,
// without claiming them: a job's first step costs no claim, no entry
// commit and no wait for a worker to poll. Each is entered as a chained
// step is (enterChained): a job that did not exist before the commit has
// nothing counted, paused or killed to read. A crash after the commit
// leaves the entries reserved, and they are delivered again when their
// visibility runs out, as a claimed delivery's would be; a Run that stops
// before taking one on hands it back at once (giveBack).
//
// Only so many starts are taken on this way at a time (a Run's workers
// times its batch, what its claims would have in flight); the starts
// beyond, and every start while no Run works, publish their entries to
// the stream for any worker. PostgreSQL's claims fold a job's first steps
// into their own commit (fold.go), which a start handed over would not.

// localRun is a Run that takes on the entries of jobs this engine starts.
type localRun struct {
	ctx context.Context
	lim limits
	// slots holds one token per start taken on and not done yet.
	slots chan struct{}
	// mu orders taking a slot against the end of the Run, which comes
	// only once ctx has ended: a start takes a slot only while ctx lives,
	// so once the end holds mu no start is taken on, and the Run waits
	// for those that were (wg).
	mu sync.RWMutex
	wg sync.WaitGroup
}

// runLocally makes the Run working under ctx and lim take on the jobs this
// engine starts, up to capacity at a time, until the returned function
// is called, after ctx has ended; that function returns once every job
// taken on has been taken as far as the Run goes. Nothing is taken on while another Run of
// the engine does so already, or on a store whose transactions lock rows.
func (w *worker) runLocally(ctx context.Context, lim limits, capacity int) (stop func()) {
	if w.caps.LocksRows {
		return func() {}
	}
	r := &localRun{ctx: ctx, lim: lim, slots: make(chan struct{}, max(capacity, 1))}
	if !w.local.CompareAndSwap(nil, r) {
		return func() {}
	}
	return func() {
		r.mu.Lock() // ctx has ended: no slot is taken after this
		w.local.CompareAndSwap(r, nil)
		r.mu.Unlock()
		r.wg.Wait()
	}
}

// takeLocal returns the Run that takes on the next start, holding one of
// its slots, or nil when none does (see runLocally); a non-nil Run's slot
// is given back by takeOn, whether or not the start commits.
func (w *worker) takeLocal() *localRun {
	r := w.local.Load()
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.ctx.Err() != nil {
		return nil
	}
	select {
	case r.slots <- struct{}{}:
		r.wg.Add(1)
		return r
	default:
		return nil
	}
}

// takeOn takes on the committed entries of a start, concurrently, in
// goroutines of the Run, and gives back the start's slot when they are
// done; with no entries (the start did not commit) it only gives the slot
// back.
func (r *localRun) takeOn(w *worker, entered []*entry) {
	if len(entered) == 0 {
		r.done()
		return
	}
	w.metrics.countEntered(entered)
	one := func(en *entry) {
		if en.deferred {
			return
		}
		if err := w.takeOnEntered(r.ctx, en, r.lim); err != nil && r.ctx.Err() == nil {
			// The message comes back when its visibility runs out, and
			// the ledgers skip what committed.
			w.log.Warn("a started job's entry step failed; it is delivered again", "act", en.t.Act, "err", err)
		}
	}
	go func() {
		defer r.done()
		var wg sync.WaitGroup
		for _, en := range entered[1:] {
			wg.Go(func() { one(en) })
		}
		one(entered[0])
		wg.Wait()
	}()
}

func (r *localRun) done() {
	<-r.slots
	r.wg.Done()
}

// takeOnEntered is proceedEntered for a start's entry: one whose Run has
// stopped is handed back untried.
func (w *worker) takeOnEntered(ctx context.Context, en *entry, lim limits) error {
	if ctx.Err() != nil {
		return w.writes.giveBack(en)
	}
	return w.proceedEntered(ctx, en, lim)
}

// enterStarted enters, in the start's transaction, the entry activations
// a start published reserved to this engine (none when it published them
// to the stream).
func (pw *protocolWriter) enterStarted(tx store.Tx, ps []publishedStep) ([]*entry, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	ens := make([]*entry, 0, len(ps))
	for _, p := range ps {
		en, err := pw.enterChained(tx, p)
		if err != nil {
			return nil, err
		}
		en.came = TakenOn
		ens = append(ens, en)
	}
	return ens, nil
}
