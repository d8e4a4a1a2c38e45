package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/store"
)

// keepHold keeps the job lease and the message's reservation alive while
// a node's call runs, whether or not the node heartbeats, until the call
// returns or timeout passes: another worker never takes the job, nor this
// one the message again, while the call is still running, so a slow node
// is never called twice at once. Both were taken when the delivery
// entered, and a delivery may have waited since (for a worker, for its
// batch's commit): they are renewed every third of the shorter of the two,
// the first in time for what is left of them, and before the call when
// less than a third is left; the call does not run when that renewal
// fails (another worker may hold the job). After that, a renewal that
// fails is tried again soon, and only a fenced lease ends the hold. After
// timeout the call has been cancelled; the last renewal lasts long enough
// for the node to return, and past that its commit is fenced. stop ends
// the hold.
func (pw *protocolWriter) keepHold(ctx context.Context, en *entry, timeout time.Duration) (stop func(), err error) {
	if en.folding {
		// A folded delivery runs within the lease its entry found fresh
		// and the transaction that reserved its message, which holds it;
		// its commit is fenced like any other.
		return func() {}, nil
	}
	every := min(pw.opts.LeaseTTL, pw.opts.Visibility) / 3
	now := pw.now()
	until := now.Add(timeout)
	// Measured on this worker's clock from the entry, which reserved the
	// message for Visibility and left the lease at least half of LeaseTTL
	// (lease reuses it only then).
	left := min(pw.opts.Visibility, pw.opts.LeaseTTL/2) - now.Sub(en.entered)
	renew := func() error { return pw.renewHold(ctx, en) }
	first := min(every, left-every/2) // renewed every third, and in time
	if left < every {
		err := renew()
		switch {
		case err == nil:
			first = every
		case errors.Is(err, store.ErrFenced) || left <= 0:
			// Another worker may hold the job, or may take it any moment.
			return nil, fmt.Errorf("renewing the hold on %s before its call: %w", en.t.Act, err)
		default:
			pw.log.Warn("renewing the hold before a call failed; calling within what is left", "job", en.job, "act", en.t.Act, "err", err)
			first = every / 4
		}
	}
	return pw.renewEvery(en, renew, first, every, until), nil
}

// renewHold renews en's job lease and extends its message's visibility,
// fenced by the lease its entry took.
func (pw *protocolWriter) renewHold(ctx context.Context, en *entry) error {
	return pw.store.Update(ctx, func(tx store.Tx) error {
		if err := tx.Fence(en.lease); err != nil {
			return err
		}
		l, err := tx.AcquireLease(en.job[:], pw.opts.Owner, pw.opts.LeaseTTL)
		if err != nil {
			return err
		}
		en.renewed.Store(&l)
		// A message settled or handed back meanwhile needs no hold.
		if err := tx.Extend(en.m.Receipt, pw.opts.Visibility); err != nil && !errors.Is(err, store.ErrStaleReceipt) {
			return err
		}
		return nil
	})
}

// renewEvery calls renew first from now, then every, until the call's
// timeout (until) passed or stop is called; a failed renewal is tried
// again sooner, but for a fenced one (another worker holds the job).
func (pw *protocolWriter) renewEvery(en *entry, renew func() error, first, every time.Duration, until time.Time) (stop func()) {
	// Nothing runs for an activation that ends before its first renewal,
	// which is nearly all of them: a timer, not a goroutine. A
	// renewal holds mu from its start to its commit, so once stop has
	// taken mu none runs, and the step's commit fences against the
	// lease the last renewal stored.
	var (
		mu      sync.Mutex
		stopped bool
		cancel  func()
		tick    func()
	)
	tick = func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped || pw.now().After(until) {
			return // the call ran out of its timeout: let the hold run out
		}
		next := every
		if err := renew(); err != nil {
			pw.log.Warn("renewing the hold on a running call failed", "job", en.job, "act", en.t.Act, "err", err)
			if errors.Is(err, store.ErrFenced) {
				return // another worker holds the job: its commit will tell
			}
			next = every / 4 // try again soon, while the hold lasts
		}
		cancel = pw.afterFunc(next, tick)
	}
	mu.Lock()
	cancel = pw.afterFunc(first, tick)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		cancel()
		mu.Unlock()
	}
}
