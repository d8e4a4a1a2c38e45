package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Kill stops a job from the top: a tombstone on its root makes every
// activation not yet run finish as canceled without running its node, so
// the job drains and ends in StateKilled. Activations already running
// finish their current attempt; parked checkpoints are released. Killing a
// job twice keeps the first reason; killing a finished job changes nothing.
func (e *Engine) Kill(ctx context.Context, job JobID, reason string) error {
	return e.store.Update(ctx, func(tx store.Tx) error { return e.killTx(tx, job, reason, 0) })
}

// killTx tombstones job and, recursively, the subflow jobs it started.
func (e *Engine) killTx(tx store.Tx, job JobID, reason string, depth int) error {
	if _, err := tx.Get(metaKey(job)); err != nil {
		return fmt.Errorf("kill %s: %w", job, err)
	}
	if depth > 64 {
		return fmt.Errorf("kill %s: subflows nested deeper than 64", job)
	}
	if err := tx.PutOnce(tombKey(job), []byte(reason)); err != nil && !errors.Is(err, store.ErrConflict) {
		return err
	}
	var children []JobID
	err := tx.Scan(jobPrefix(job, "sub"), func(k, v []byte) error {
		var child JobID
		copy(child[:], v)
		children = append(children, child)
		return nil
	})
	if err != nil {
		return err
	}
	for _, child := range children {
		if err := e.killTx(tx, child, "parent killed: "+reason, depth+1); err != nil {
			return err
		}
	}
	// Parked checkpoints resume so that they finish canceled; a parked
	// subflow activation waits for its (now killed) child to report.
	return e.resumeWaiting(tx, job, "kill", func(t task) (bool, error) {
		c, err := e.flow(t.Flow)
		if err != nil {
			return true, nil
		}
		n := c.byAlias[t.Node]
		return n == nil || n.Subflow == nil, nil
	})
}

// Pause holds a job: its messages are handed back unprocessed until
// Resume. Activations already running finish their current attempt.
func (e *Engine) Pause(ctx context.Context, job JobID) error {
	return e.store.Update(ctx, func(tx store.Tx) error {
		if _, err := tx.Get(metaKey(job)); err != nil {
			return fmt.Errorf("pause %s: %w", job, err)
		}
		return tx.Put(pausedKey(job), []byte(time.Now().UTC().Format(time.RFC3339)))
	})
}

// Resume lets a paused job continue.
func (e *Engine) Resume(ctx context.Context, job JobID) error {
	return e.store.Update(ctx, func(tx store.Tx) error {
		if _, err := tx.Get(metaKey(job)); err != nil {
			return fmt.Errorf("resume %s: %w", job, err)
		}
		return tx.Delete(pausedKey(job))
	})
}

// isPaused reports whether the job is paused.
func isPaused(tx store.ReadTx, job JobID) (bool, error) {
	_, err := tx.Get(pausedKey(job))
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// pausedRetry is how soon a paused job's message is looked at again.
const pausedRetry = 200 * time.Millisecond

// Inspect returns everything the store holds about a job, from one prefix
// scan of its root: values (results decoded from JSON) and counters
// (ledgers decoded into words).
func (e *Engine) Inspect(ctx context.Context, job JobID) (*Inspection, error) {
	return InspectJob(ctx, e.store, job)
}

// Inspection is a job's stored state: key by key, and as a tree of
// activations.
type Inspection struct {
	Job     string            `json:"job"`
	Status  JobStatus         `json:"status"`
	Summary string            `json:"summary"`
	Tree    []*ActivationView `json:"tree"`
	Entries []InspectionEntry `json:"entries"`
}

// ActivationView is one activation of a job as inspection sees it.
type ActivationView struct {
	// Act is the activation id: node@dimension<predecessor. The dimension
	// ("/2" for forEach element 2, "/poll~3" for the third pass of a loop
	// into poll) makes every run of a node distinct.
	Act  string `json:"act"`
	Node string `json:"node"`
	Dim  string `json:"dim,omitempty"`
	// Index is the element number of a forEach element (-1 otherwise).
	Index int `json:"index"`
	// State is pending (not yet started: a forEach element beyond its
	// concurrency window), enqueued, launched (delivered, running or
	// retrying), parked (waiting for a signal or a subflow), succeeded,
	// failed, canceled (the job was killed) or timeout.
	State    ActivationState `json:"state"`
	Attempts int             `json:"attempts,omitempty"`
	Error    string          `json:"error,omitempty"`
	// Finished is when the activation's result was committed (zero while
	// it runs, and for results stored before times were recorded).
	Finished time.Time `json:"finished,omitzero"`
	// Port is the output port a finished activation's output left on (a
	// switch's label, a checkpoint's approved or rejected).
	Port string `json:"port,omitempty"`
	// Ledger is the activity ledger's value and its digits in words.
	Ledger      int64  `json:"ledger,omitempty"`
	LedgerWords string `json:"ledgerWords,omitempty"`
	// Elements is a forEach's fan-out size; Children its elements.
	Elements int               `json:"elements,omitempty"`
	Children []*ActivationView `json:"children,omitempty"`

	id runtype.ActivationID
}

// InspectionEntry is one key of a job's state.
type InspectionEntry struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value,omitempty"`
	Text  string          `json:"text,omitempty"`
	// Counter and Words are set for counters: the raw value and, for
	// ledgers, its digits decoded.
	Counter *int64 `json:"counter,omitempty"`
	Words   string `json:"words,omitempty"`
}
