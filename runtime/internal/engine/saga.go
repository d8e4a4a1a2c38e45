package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// recordCompensable remembers, in the step 1 commit, that a node with a
// compensation completed successfully, in completion order.
func (pw *protocolWriter) recordCompensable(tx store.Tx, c *compiled, en *entry, res *result) error {
	n := c.byAlias[en.t.Node]
	if n == nil || n.Compensate == nil || en.t.Kind == protocol.Undo || res.Failed() {
		return nil
	}
	seq, err := tx.Add(protocol.CompletionSeqKey(en.job), 1, maxSemaphore)
	if err != nil {
		return err
	}
	return tx.PutOnce(protocol.CompensableKey(en.job, seq), []byte(en.t.Act))
}

// startCompensation runs in step 3 of a failed job whose compensation has
// not started: when compensable activations completed, it reopens the job
// (semaphore +1) and publishes the first undo, newest first. It reports
// whether it did, in which case the job is not complete yet.
func (pw *protocolWriter) startCompensation(tx store.Tx, en *entry, failed bool) (bool, error) {
	job := en.job
	if !failed {
		return false, nil
	}
	var acts []string
	err := tx.Scan(protocol.JobPrefix(job, "done"), func(k, v []byte) error {
		acts = append(acts, string(v))
		return nil
	})
	if err != nil || len(acts) == 0 {
		return false, err
	}
	if err := tx.Put(protocol.CompensationKey(job), []byte(fmt.Sprint(len(acts)))); err != nil {
		return false, err
	}
	ev := runtype.HistoryEvent{Event: runtype.EventCompensating, Detail: fmt.Sprintf("undoing %d completed step(s), newest first", len(acts))}
	if err := pw.record(tx, job, ev); err != nil {
		return false, err
	}
	for i := range acts {
		if err := tx.Put(protocol.CompensationStepKey(job, i+1), []byte(acts[len(acts)-1-i])); err != nil {
			return false, err
		}
	}
	if err := tx.Bump(protocol.SemKey(job), 1, maxSemaphore); err != nil {
		return false, err
	}
	first, err := undoTask(tx, job, en.t.Flow, 1, len(acts))
	if err != nil {
		return false, err
	}
	return true, pw.publish(tx, job, first)
}

// haltedAt, for a job whose compensation chain halted at a failed step
// (CompensateHalt), keeps in st only the compensations before it and says
// where the chain stopped.
func haltedAt(tx store.Tx, job runtype.JobID, st *runtype.JobStatus) error {
	raw, err := tx.Get(protocol.CompensationHaltKey(job))
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	i, err := strconv.Atoi(string(raw))
	if err != nil || i < 1 || i > len(st.Compensated) {
		return fmt.Errorf("job %s: compensation halt %q", job, raw)
	}
	st.Errors = append(st.Errors, fmt.Sprintf("compensation halted at step %d of %d (%s): not undone: %s",
		i, len(st.Compensated), st.Compensated[i-1], strings.Join(st.Compensated[i-1:], ", ")))
	st.Compensated = st.Compensated[:i-1]
	return nil
}

// undoTask builds the i-th compensation of the chain: the undone
// activation's node, fed with that activation's output.
func undoTask(tx store.Tx, job runtype.JobID, flow string, i, n int) (task, error) {
	act, err := tx.Get(protocol.CompensationStepKey(job, i))
	if err != nil {
		return task{}, err
	}
	raw, err := tx.Get(protocol.ResultKey(job, string(act)))
	if err != nil {
		return task{}, err
	}
	var r result
	if err := json.Unmarshal(raw, &r); err != nil {
		return task{}, err
	}
	done, err := runtype.Parse(string(act))
	if err != nil {
		return task{}, fmt.Errorf("compensation %d of %d: %w", i, n, err)
	}
	undo, err := runtype.UndoOf(done)
	if err != nil {
		return task{}, fmt.Errorf("compensation %d of %d: %w", i, n, err)
	}
	return task{Kind: protocol.Undo, Flow: flow, Node: done.Node(), Act: undo.String(), Input: r.Output, Compensation: &protocol.Compensation{Step: i, Of: n}}, nil
}

// parksForAHuman reports whether the outcome r of t parks it for a
// decision instead of being committed: a compensation that failed under
// CompensatePark, unless a decision gave it up. why says so in the
// history.
func parksForAHuman(c *compiled, t task, r result) (string, bool) {
	if t.Kind != protocol.Undo || !r.Failed() || c.OnCompensationFailure != runtype.CompensatePark || strings.HasPrefix(t.Resume, skipResume+"#") {
		return "", false
	}
	return fmt.Sprintf("compensation failed (%s: %s); waiting for a decision at %s: approve retries it, reject gives it up", r.ErrKind, r.Err, t.Node), true
}
