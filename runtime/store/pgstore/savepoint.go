package pgstore

import (
	"fmt"
	"maps"
	"strconv"

	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Atomically uses a savepoint that costs no
// round trip of its own: the writes queued before fn, then SAVEPOINT,
// travel in front of fn's first statement, and RELEASE in front of the
// statement after fn. fn's queued writes are sent before it returns, so
// their errors are its own; a unit that failed on the server costs one
// more round trip, ROLLBACK TO SAVEPOINT. Should the writes queued before
// fn fail, SAVEPOINT never ran, that rollback fails too, and the whole
// transaction fails with them.
func (t *tx) Atomically(fn func(store.Tx) error) error {
	if t.failed != nil {
		return t.failed
	}
	// The reservations that wait are the transaction's: written before
	// the savepoint, no unit can undo them by undoing an acknowledgement.
	if err := t.writeClaims(); err != nil {
		return err
	}
	if len(t.pending.op) > 0 { // the transaction's, not fn's: they go first
		text, err := inline(applySQL, t.pending.args(t.now))
		if err != nil {
			return err
		}
		t.prefix = append(t.prefix, ahead{text: text, rows: true})
		t.pending.reset()
	}
	t.savepoints++
	name := "flowgen_unit_" + strconv.Itoa(t.savepoints)
	begin := ahead{text: "SAVEPOINT " + name}
	t.prefix = append(t.prefix, begin)
	leases, holding := maps.Clone(t.leases), maps.Clone(t.holding)
	err := fn(t)
	if err == nil {
		err = t.flush()
	}
	// unsent: nothing of fn reached the server, SAVEPOINT still waits.
	unsent := len(t.prefix) > 0 && t.prefix[len(t.prefix)-1] == begin
	if unsent {
		t.prefix = t.prefix[:len(t.prefix)-1]
	}
	if err == nil {
		if !unsent {
			t.prefix = append(t.prefix, ahead{text: "RELEASE SAVEPOINT " + name})
		}
		return nil
	}
	t.pending.reset()
	t.leases, t.holding = leases, holding
	if unsent {
		return err
	}
	if rerr := t.exec("ROLLBACK TO SAVEPOINT " + name); rerr != nil {
		t.failed = fmt.Errorf("%w (and undoing its unit failed: %v)", err, rerr)
		return err
	}
	t.failed = nil
	return err
}
