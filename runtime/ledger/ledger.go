// Package ledger holds the monotonic collation ledgers of the runtime's step
// protocol as plain values: the activity ledger of a node activation, the
// GUID ledger of one processed message, and the job semaphore delta rule.
//
// A ledger is a 15-digit decimal integer that only grows. Each durable step
// of the protocol commits in the same store transaction as the increment
// that proves it, so reading one integer tells what has committed and what
// must be retried. This package decides the increments and decodes values;
// the store applies the increments atomically with the work they prove.
//
// Activity ledger digits (position 1 is the most significant):
//
//	1      finalize (0 active, 2 finalized)            +200T
//	2-7    reserved (never written)
//	8-15   leg 2 entry counter (0..99,999,999)         +1
//
// Leg 2 is the delivery of a message to a worker; digits 2-7 were once a
// separate leg 1 of the protocol and stay reserved so the layout of stored
// ledgers does not move.
//
// GUID ledger digits:
//
//	4      job-closed snapshot (set by the step 2 compound primitive) +100B
//	5      step 1 marker: work done                    +10B
//	6      step 2 marker: children published           +1B
//	7      step 3 marker: job completion tasks done    +100M
//	8-15   ordinal: the activity's leg 2 entry count when the GUID was created
//
// Ceilings are enforced, never wrapped: an increment that would carry into
// a neighbouring field returns ErrOverflow.
package ledger

import (
	"errors"
	"fmt"
	"strings"
)

// Digit weights of the activity ledger.
const (
	Finalize    int64 = 200_000_000_000_000
	Leg2Entry   int64 = 1
	MaxLeg2     int64 = 99_999_999
	MaxValue    int64 = 999_999_999_999_999
	leg2Modulus int64 = 100_000_000
)

// Digit weights of the GUID ledger.
const (
	JobClosed       int64 = 100_000_000_000
	WorkDone        int64 = 10_000_000_000
	ChildrenSpawned int64 = 1_000_000_000
	CompletionDone  int64 = 100_000_000
	MaxOrdinal      int64 = MaxLeg2
)

// ErrOverflow is returned when an increment would exceed a field's ceiling;
// the activation must fail fast and escalate rather than wrap.
var ErrOverflow = errors.New("ledger: ceiling reached")

// ErrAlreadySet is returned when a one-shot marker is set a second time;
// callers skip the step instead.
var ErrAlreadySet = errors.New("ledger: marker already set")

// digit returns the decimal digit of v at weight w.
func digit(v, w int64) int64 { return v / w % 10 }

// Activity is the value of an activity ledger.
type Activity int64

// Leg2Entries is how many times leg 2 has been entered.
func (a Activity) Leg2Entries() int64 { return int64(a) % leg2Modulus }

// Finalized reports whether the activation ran job completion tasks and
// accepts no further leg 2 messages.
func (a Activity) Finalized() bool { return digit(int64(a), Finalize/2) == 2 }

// DimensionalIndex is the zero-based index of the current leg 2 entry; each
// cycle iteration publishes its descendants under its own index.
func (a Activity) DimensionalIndex() int64 { return a.Leg2Entries() - 1 }

// Leg2EntryDelta returns the increment that records a leg 2 entry.
func (a Activity) Leg2EntryDelta() (int64, error) {
	if a.Leg2Entries() >= MaxLeg2 {
		return 0, fmt.Errorf("%w: %d leg 2 entries", ErrOverflow, a.Leg2Entries())
	}
	return Leg2Entry, nil
}

// FinalizeDelta returns the increment that finalizes the activation.
func (a Activity) FinalizeDelta() (int64, error) {
	if a.Finalized() {
		return 0, ErrAlreadySet
	}
	return Finalize, nil
}

// String renders the ledger as its 15 digits.
func (a Activity) String() string { return fmt.Sprintf("%015d", int64(a)) }

// Words decodes the ledger for people: "leg2 entries=1, finalized".
func (a Activity) Words() string {
	var b strings.Builder
	fmt.Fprintf(&b, "leg2 entries=%d", a.Leg2Entries())
	if a.Finalized() {
		b.WriteString(", finalized")
	}
	return b.String()
}

// GUID is the value of the ledger of one processed message.
type GUID int64

// NewGUID seeds a GUID ledger with the activity's leg 2 entry count.
func NewGUID(ordinal int64) (GUID, error) {
	if ordinal < 0 || ordinal > MaxOrdinal {
		return 0, fmt.Errorf("%w: ordinal %d", ErrOverflow, ordinal)
	}
	return GUID(ordinal), nil
}

// Ordinal is the message's position among the activation's leg 2 entries.
func (g GUID) Ordinal() int64 { return int64(g) % leg2Modulus }

// JobClosed reports whether this message's step 2 brought the job
// semaphore to its threshold, making it responsible for step 3.
func (g GUID) JobClosed() bool { return digit(int64(g), JobClosed) == 1 }

// WorkDone reports whether step 1 committed.
func (g GUID) WorkDone() bool { return digit(int64(g), WorkDone) == 1 }

// ChildrenSpawned reports whether step 2 committed.
func (g GUID) ChildrenSpawned() bool { return digit(int64(g), ChildrenSpawned) == 1 }

// CompletionDone reports whether step 3 committed.
func (g GUID) CompletionDone() bool { return digit(int64(g), CompletionDone) == 1 }

// NeedsCompletion reports whether step 3 must still run for this message:
// it closed the job and the completion tasks have not committed.
func (g GUID) NeedsCompletion() bool { return g.JobClosed() && !g.CompletionDone() }

// StepDelta returns the increment that marks step (1, 2 or 3) done, or
// ErrAlreadySet when it is already marked.
func (g GUID) StepDelta(step int) (int64, error) {
	var w int64
	switch step {
	case 1:
		w = WorkDone
	case 2:
		w = ChildrenSpawned
	case 3:
		w = CompletionDone
	default:
		return 0, fmt.Errorf("ledger: no step %d", step)
	}
	if digit(int64(g), w) != 0 {
		return 0, ErrAlreadySet
	}
	return w, nil
}

// String renders the ledger as its 15 digits.
func (g GUID) String() string { return fmt.Sprintf("%015d", int64(g)) }

// Words decodes the ledger for people: "ordinal=1, work done, children
// published, closed the job, completion done".
func (g GUID) Words() string {
	parts := []string{fmt.Sprintf("ordinal=%d", g.Ordinal())}
	for _, f := range []struct {
		set  bool
		word string
	}{
		{g.WorkDone(), "work done"},
		{g.ChildrenSpawned(), "children published"},
		{g.JobClosed(), "closed the job"},
		{g.CompletionDone(), "completion done"},
	} {
		if f.set {
			parts = append(parts, f.word)
		}
	}
	return strings.Join(parts, ", ")
}

// SemaphoreDelta is the change to the job semaphore when an activation
// finishes and publishes children: the activation's obligation closes (-1)
// and each child opens one (+children).
func SemaphoreDelta(children int) int64 { return int64(children) - 1 }
