package pgstore

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Atomically implements store.Savepoints with a savepoint that costs no
// round trip of its own: SAVEPOINT travels in front of fn's first
// statement and RELEASE in front of the statement after fn. fn's queued
// writes are sent before it returns, so their errors are its own; a unit
// that failed on the server costs one more round trip, ROLLBACK TO
// SAVEPOINT.
func (t *tx) Atomically(fn func(store.Tx) error) error {
	// Writes queued before fn belong to the transaction, not to fn: they
	// go first, so an error of theirs is not mistaken for fn's.
	if err := t.flush(); err != nil {
		return err
	}
	t.savepoints++
	name := "flowgen_unit_" + strconv.Itoa(t.savepoints)
	begin := "SAVEPOINT " + name
	t.prefix = append(t.prefix, begin)
	leases, holding := maps.Clone(t.leases), maps.Clone(t.holding)
	err := fn(t)
	if err == nil {
		err = t.flush()
	}
	// unsent: nothing of fn reached the server, SAVEPOINT still waits.
	unsent := len(t.prefix) > 0 && t.prefix[len(t.prefix)-1] == begin
	if unsent {
		t.prefix = slices.Delete(t.prefix, len(t.prefix)-1, len(t.prefix))
	}
	if err == nil {
		if !unsent {
			t.prefix = append(t.prefix, "RELEASE SAVEPOINT "+name)
		}
		return nil
	}
	t.pending.reset()
	t.leases, t.holding = leases, holding
	if unsent {
		return err
	}
	if rerr := t.exec("ROLLBACK TO SAVEPOINT " + name); rerr != nil {
		t.failed = fmt.Errorf("undo a failed unit (%v): %w", err, rerr)
		return err
	}
	t.failed = nil
	return err
}
