package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Kill stops a job from the top: a tombstone on its root makes every
// activation not yet run finish as canceled without running its node, so
// the job drains and ends in StateKilled. Activations already running
// finish their current attempt; parked checkpoints are released. Killing a
// job twice keeps the first reason; killing a finished job changes nothing.
func (e *Engine) Kill(ctx context.Context, job runtype.JobID, reason string) error {
	return e.store.Update(ctx, func(tx store.Tx) error { return e.writes.killTx(tx, job, reason, 0) })
}

// killTx tombstones job and, recursively, the subflow jobs it started.
func (pw *protocolWriter) killTx(tx store.Tx, job runtype.JobID, reason string, depth int) error {
	if _, err := tx.Get(protocol.MetaKey(job)); err != nil {
		if sweptChild(err, depth) {
			return nil
		}
		return fmt.Errorf("kill %s: %w", job, err)
	}
	if depth > 64 {
		return fmt.Errorf("kill %s: subflows nested deeper than 64", job)
	}
	// The first reason stands: a second kill changes nothing.
	if _, err := tx.Get(protocol.TombKey(job)); errors.Is(err, store.ErrNotFound) {
		if err := tx.Put(protocol.TombKey(job), []byte(reason)); err != nil {
			return err
		}
		if err := pw.record(tx, job, runtype.HistoryEvent{Event: runtype.EventKilled, Detail: reason}); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	// Kill beats pause: a paused job winds down at once, canceled, with
	// no one resuming it first.
	if err := tx.Delete(protocol.PausedKey(job)); err != nil {
		return err
	}
	children, err := subflowJobs(tx, job)
	if err != nil {
		return err
	}
	for _, child := range children {
		if err := pw.killTx(tx, child, "parent killed: "+reason, depth+1); err != nil {
			return err
		}
	}
	// Parked checkpoints resume so that they finish canceled; a parked
	// subflow activation waits for its (now killed) child to report.
	return pw.resumeWaiting(tx, job, "kill", func(t *task) (bool, error) {
		c, err := pw.flows.flow(t.Flow)
		if err != nil {
			return true, nil
		}
		n := c.byAlias[t.Node]
		return n == nil || n.Subflow == nil, nil
	})
}

// Pause holds a job and the subflow jobs it started: their messages are
// handed back unprocessed until Resume. Activations already running
// finish their current attempt. Kill beats pause: pausing a killed job
// does nothing, and killing a paused job lets it wind down at once.
func (e *Engine) Pause(ctx context.Context, job runtype.JobID) error {
	return e.store.Update(ctx, func(tx store.Tx) error { return e.writes.pause(tx, job) })
}

// pause is Pause in tx.
func (pw *protocolWriter) pause(tx store.Tx, job runtype.JobID) error {
	at := []byte(pw.now().UTC().Format(time.RFC3339))
	return eachSubflowJob(tx, job, "pause", 0, func(job runtype.JobID) error {
		if _, err := tx.Get(protocol.TombKey(job)); err == nil {
			return nil // killed: it winds down, and kill beats pause
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := pw.record(tx, job, runtype.HistoryEvent{Event: runtype.EventPaused}); err != nil {
			return err
		}
		return tx.Put(protocol.PausedKey(job), at)
	})
}

// Resume lets a paused job, and the subflow jobs it started, continue.
func (e *Engine) Resume(ctx context.Context, job runtype.JobID) error {
	return e.store.Update(ctx, func(tx store.Tx) error { return e.writes.resume(tx, job) })
}

// resume is Resume in tx.
func (pw *protocolWriter) resume(tx store.Tx, job runtype.JobID) error {
	return eachSubflowJob(tx, job, "resume", 0, func(job runtype.JobID) error {
		if paused, err := isPaused(tx, job); err != nil || !paused {
			return err
		}
		if err := pw.record(tx, job, runtype.HistoryEvent{Event: runtype.EventResumed}); err != nil {
			return err
		}
		return tx.Delete(protocol.PausedKey(job))
	})
}

// eachSubflowJob calls fn for job and, depth first, every subflow job it
// started; job must exist.
func eachSubflowJob(tx store.Tx, job runtype.JobID, what string, depth int, fn func(runtype.JobID) error) error {
	if _, err := tx.Get(protocol.MetaKey(job)); err != nil {
		if sweptChild(err, depth) {
			return nil
		}
		return fmt.Errorf("%s %s: %w", what, job, err)
	}
	if depth > 64 {
		return fmt.Errorf("%s %s: subflows nested deeper than 64", what, job)
	}
	if err := fn(job); err != nil {
		return err
	}
	children, err := subflowJobs(tx, job)
	if err != nil {
		return err
	}
	for _, child := range children {
		if err := eachSubflowJob(tx, child, what, depth+1, fn); err != nil {
			return err
		}
	}
	return nil
}

// sweptChild reports whether a job reached depth subflows down has no
// meta because it finished and retention deleted it (its flow may keep
// jobs for less time than its parent's): control has nothing to do there.
func sweptChild(err error, depth int) bool {
	return depth > 0 && errors.Is(err, store.ErrNotFound)
}

// subflowJobs are the child jobs job's subflow activations started.
func subflowJobs(tx store.ReadTx, job runtype.JobID) ([]runtype.JobID, error) {
	var children []runtype.JobID
	err := tx.Scan(protocol.JobPrefix(job, "sub"), func(k, v []byte) error {
		var child runtype.JobID
		copy(child[:], v)
		children = append(children, child)
		return nil
	})
	return children, err
}

// isPaused reports whether the job is paused.
func isPaused(tx store.ReadTx, job runtype.JobID) (bool, error) {
	_, err := tx.Get(protocol.PausedKey(job))
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
func (e *Engine) Inspect(ctx context.Context, job runtype.JobID) (*runtype.Inspection, error) {
	return InspectJob(ctx, e.store, job)
}
