package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fxamacker/cbor/v2"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Subflow state: the parent keeps pid/<root>/sub/<act> (the child job id)
// and, once the child ends, pid/<root>/child/<act> (the child's status);
// large boundary inputs live under blobs/<sha256>, outside any root.

// defaultMaxDepth bounds subflow nesting when a Subflow sets no limit.
const defaultMaxDepth = 8

// errStartChild asks proceed to start the subflow's child job while
// parking the parent activation, in one commit.
var errStartChild = errors.New("start child")

// boundaryOf is how a task carries input: inline (ref empty), or, when
// it is too large, as the ref of the blob storeBoundary stores.
func boundaryOf(input json.RawMessage) (json.RawMessage, string) {
	if len(input) <= protocol.InlineLimit {
		return input, ""
	}
	sum := sha256.Sum256(input)
	return nil, hex.EncodeToString(sum[:])
}

// storeBoundary stores input once under its hash, counting one more job
// whose input it is, when it is too large to travel inline (boundaryOf);
// writeJob calls it once per job.
func storeBoundary(tx store.Tx, input json.RawMessage) error {
	_, ref := boundaryOf(input)
	if ref == "" {
		return nil
	}
	if err := protocol.ReferenceBlob(tx, ref); err != nil {
		return err
	}
	return tx.PutOnce(protocol.BlobKey(ref), input)
}

func (p *processor) loadBoundary(ctx context.Context, ref string) (json.RawMessage, error) {
	var in json.RawMessage
	err := p.view.View(ctx, func(tx store.ReadTx) error {
		b, err := tx.Get(protocol.BlobKey(ref))
		in = append(json.RawMessage(nil), b...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("boundary input %s: %w", ref, err)
	}
	return in, nil
}

// subflowResult is the subflow node's work: the child's outcome once it
// reported, errStartChild before.
func (p *processor) subflowResult(ctx context.Context, job runtype.JobID, t task, sf *runtype.Subflow) (result, error) {
	var st runtype.JobStatus
	err := p.view.View(ctx, func(tx store.ReadTx) error {
		raw, err := tx.Get(protocol.SubflowStatusKey(job, t.Act))
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, &st)
	})
	if errors.Is(err, store.ErrNotFound) {
		return result{}, errStartChild
	}
	if err != nil {
		return result{}, err
	}
	if st.State != runtype.StateSucceeded {
		return result{ErrKind: runtype.FailureOf(flowtype.Permanent), Err: fmt.Sprintf("subflow %s ended %s: %v", sf.Flow, st.State, st.Errors), Attempts: 1}, nil
	}
	out, err := json.Marshal(st.Result)
	if err != nil {
		return result{}, err
	}
	return result{Output: out, Port: "out", Attempts: 1}, nil
}

// startChild creates the child job (only the listed entry nodes receive
// the input) and records it on the parent, in the parking commit. A child
// that would nest too deep, or names an unknown flow or entry, fails the
// parent activation at once by reporting a failed status.
func (pw *protocolWriter) startChild(tx store.Tx, c *compiled, en *entry) error {
	sf := c.byAlias[en.t.Node].Subflow
	meta, left, err := pw.childMeta(tx, en, sf)
	if err != nil {
		return err
	}
	child, err := childJobID(tx, en)
	if err != nil {
		return err
	}
	refuse := func(format string, args ...any) error {
		return pw.refuseChild(tx, en, fmt.Sprintf(format, args...))
	}
	limit := sf.MaxDepth
	if limit <= 0 {
		limit = defaultMaxDepth
	}
	if meta.Depth > limit {
		return refuse("subflow %s would nest %d deep, deeper than the limit of %d", sf.Flow, meta.Depth, limit)
	}
	if en.t.MaxActivations > 0 && left.MaxActivations <= 0 {
		return refuse("budget exhausted: no activations left of %d for subflow %s", en.t.MaxActivations, sf.Flow)
	}
	cc, err := pw.flows.flow(sf.Flow)
	if err != nil {
		return refuse("%v", err)
	}
	// The child runs on the newest definition of its flow when it starts
	// (or the version the subflow names, flow@version), to its end.
	meta.Flow, meta.Version, meta.Hash = cc.Name, cc.Version, cc.hash
	for _, in := range sf.Inputs {
		if cc.byAlias[in] == nil {
			return refuse("subflow %s has no node %q to receive the input", sf.Flow, in)
		}
	}
	if err := tx.Put(protocol.SubflowChildKey(en.job, en.t.Act), child[:]); err != nil {
		return err
	}
	if _, err := tx.Get(protocol.TombKey(en.job)); err == nil {
		return refuse("job was killed")
	}
	return pw.createJob(tx, child, cc, meta, sf.Inputs)
}

// childMeta is the meta of the job en's subflow sf starts, one deeper
// than its parent's and within what is left of the parent's budget,
// which it returns too.
func (pw *protocolWriter) childMeta(tx store.Tx, en *entry, sf *runtype.Subflow) (jobMeta, jobBudget, error) {
	raw, err := tx.Get(protocol.MetaKey(en.job))
	if err != nil {
		return jobMeta{}, jobBudget{}, err
	}
	var parentMeta jobMeta
	if err := json.Unmarshal(raw, &parentMeta); err != nil {
		return jobMeta{}, jobBudget{}, err
	}
	taskRaw, err := cbor.Marshal(en.t)
	if err != nil {
		return jobMeta{}, jobBudget{}, err
	}
	now := pw.now().UTC()
	meta := jobMeta{Flow: sf.Flow, Input: en.t.Input, Started: now, Depth: parentMeta.Depth + 1,
		Parent: &parentRef{Job: en.job.String(), Act: en.t.Act, Task: taskRaw},
		Trace:  en.span} // the child's trace goes on under the parent's subflow activation
	left := budgetOf(en.t)
	if left.MaxActivations > 0 {
		used, err := spent(tx, en.job)
		if err != nil {
			return jobMeta{}, jobBudget{}, err
		}
		left.MaxActivations -= used
	}
	meta.Budget = budgetFrom(sf.Budget, now).within(left)
	return meta, left, nil
}

// refuseChild fails en's subflow activation at once, for why: its child
// reports a failed status without ever starting.
func (pw *protocolWriter) refuseChild(tx store.Tx, en *entry, why string) error {
	st, _ := json.Marshal(runtype.JobStatus{State: runtype.StateFailed, Errors: []string{flowtype.PolicyDenied.String() + ": " + why}})
	if err := tx.Put(protocol.SubflowStatusKey(en.job, en.t.Act), st); err != nil {
		return err
	}
	if err := tx.Delete(protocol.WaitKey(en.job, en.t.Act)); err != nil {
		return err
	}
	t := en.t
	t.Resume = "child"
	return pw.publish(tx, en.job, t)
}

// childJobID is the id of the job the subflow activation en starts: the
// one its parent step recorded, when a replay of that step finds it, and a
// fresh UUIDv7 otherwise, so children sort by creation time in the job
// index like every other job.
func childJobID(tx store.Tx, en *entry) (runtype.JobID, error) {
	raw, err := tx.Get(protocol.SubflowChildKey(en.job, en.t.Act))
	switch {
	case err == nil:
		var child runtype.JobID
		if len(raw) != len(child) {
			return child, fmt.Errorf("subflow child of %s in job %s: stored id has %d bytes", en.t.Act, en.job, len(raw))
		}
		copy(child[:], raw)
		return child, nil
	case errors.Is(err, store.ErrNotFound):
		return runtype.NewJobID()
	}
	return runtype.JobID{}, err
}

// reportToParent runs in a job's completion: a subflow job (one with a
// parent) hands its status to the waiting parent activation and resumes
// it, in the same commit.
func (pw *protocolWriter) reportToParent(tx store.Tx, job runtype.JobID, ref *parentRef, status []byte) error {
	if ref == nil {
		return nil
	}
	parent, err := runtype.ParseJobID(ref.Job)
	if err != nil {
		return err
	}
	if err := tx.PutOnce(protocol.SubflowStatusKey(parent, ref.Act), status); err != nil {
		return err
	}
	// The child's activations count against the parent's budget.
	if used, err := spent(tx, job); err != nil {
		return err
	} else if used > 0 {
		if err := tx.Bump(protocol.SpentKey(parent), used, budgetCeiling); err != nil {
			return fmt.Errorf("budget: %w", err)
		}
	}
	var t task
	if err := cbor.Unmarshal(ref.Task, &t); err != nil {
		return err
	}
	if err := tx.Delete(protocol.WaitKey(parent, t.Act)); err != nil {
		return err
	}
	t.Resume = "child"
	return pw.publish(tx, parent, t)
}
