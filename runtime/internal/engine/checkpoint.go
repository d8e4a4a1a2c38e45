package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/fxamacker/cbor/v2"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// errParked ends processing of a checkpoint activation that waits for a
// decision.
var errParked = errors.New("parked")

// decision is the checkpoint's work: the recorded decision routes the input
// to "approved" or "rejected"; without one the activation parks.
func (p *processor) decision(ctx context.Context, job runtype.JobID, t task) (result, error) {
	var d runtype.Decision
	err := p.view.View(ctx, func(tx store.ReadTx) error {
		raw, err := tx.Get(protocol.SignalKey(job, t.Act))
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, &d)
	})
	if errors.Is(err, store.ErrNotFound) {
		return result{}, errParked
	}
	if err != nil {
		return result{}, err
	}
	port := "rejected"
	if d.Approved {
		port = "approved"
	}
	return result{Output: t.Input, Port: port, Attempts: 1}, nil
}

// park records the waiting activation and acknowledges its message in one
// commit, with also's writes when given; the job's obligation stays open
// until a signal or a child job resumes it. why, when not empty, says in
// the history what it waits for.
func (pw *protocolWriter) park(ctx context.Context, en *entry, why string, also func(store.Tx) error) error {
	err := pw.store.Update(ctx, func(tx store.Tx) error {
		if err := tx.Fence(en.lease); err != nil {
			return err
		}
		if err := tx.Put(protocol.WaitKey(en.job, en.t.Act), en.m.Payload); err != nil {
			return err
		}
		ev := runtype.HistoryEvent{Event: runtype.EventParked, Act: en.t.Act, Attempt: en.m.Attempt, Since: en.entered.UTC(), Detail: why}
		if err := pw.record(tx, en.job, ev); err != nil {
			return err
		}
		if also != nil {
			if err := also(tx); err != nil {
				return err
			}
		}
		return tx.Settle(en.m.Receipt)
	})
	if err != nil {
		return fmt.Errorf("%s: park: %w", en.t.Act, err)
	}
	return pw.hook.crash(runtype.CrashAcked)
}

// Signal records a decision for every activation of the checkpoint node
// alias that waits in the job, and resumes them; it returns how many it
// resumed. A decision is final: signalling the same activation again does
// not change it. A compensation of alias parked after it failed
// (CompensatePark) is retried when d approves and given up when it
// rejects; if it fails again it parks again, for another decision.
func (e *Engine) Signal(ctx context.Context, job runtype.JobID, alias string, d runtype.Decision) (int, error) {
	raw, err := json.Marshal(d)
	if err != nil {
		return 0, err
	}
	n := 0
	err = e.store.Update(ctx, func(tx store.Tx) (err error) {
		n, err = e.writes.signal(tx, job, alias, d, raw)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("signal %s in job %s: %w", alias, job, err)
	}
	if n == 0 {
		return 0, fmt.Errorf("signal %s in job %s: no checkpoint of that name is waiting: %w", alias, job, store.ErrNotFound)
	}
	return n, nil
}

// signal is Signal in tx, with d encoded as raw.
func (pw *protocolWriter) signal(tx store.Tx, job runtype.JobID, alias string, d runtype.Decision, raw []byte) (int, error) {
	n := 0
	err := pw.resumeWaiting(tx, job, "signal", func(t *task) (bool, error) {
		if t.Node != alias || t.Wake != 0 { // a sleep wakes by its time only
			return false, nil
		}
		n++
		detail := map[bool]string{true: "approved", false: "rejected"}[d.Approved]
		if d.By != "" {
			detail += " by " + d.By
		}
		if t.Kind == protocol.Undo {
			t.Resume = map[bool]string{true: retryResume, false: skipResume}[d.Approved]
			detail += map[bool]string{true: ": retry the compensation", false: ": give the compensation up"}[d.Approved]
		}
		if err := pw.record(tx, job, runtype.HistoryEvent{Event: runtype.EventSignaled, Act: t.Act, Detail: detail}); err != nil {
			return false, err
		}
		if t.Kind == protocol.Undo {
			return true, nil // the decision travels in the resumption
		}
		return true, tx.PutOnce(protocol.SignalKey(job, t.Act), raw)
	})
	return n, err
}

// Resumptions of a compensation parked under CompensatePark: retry runs it
// again, skip gives it up. Each resumption of a parked compensation is
// numbered (task.Round), so that every one is a message of its own.
const (
	retryResume = "retry"
	skipResume  = "skip"
)

// resumeWaiting republishes the parked activations that pick accepts,
// resumed for why unless pick sets another resumption.
func (pw *protocolWriter) resumeWaiting(tx store.Tx, job runtype.JobID, why string, pick func(*task) (bool, error)) error {
	type parked struct {
		key []byte
		t   task
	}
	var found []parked
	err := tx.Scan(protocol.JobPrefix(job, "wait"), func(k, v []byte) error {
		var t task
		if err := cbor.Unmarshal(v, &t); err != nil {
			return err
		}
		found = append(found, parked{append([]byte(nil), k...), t})
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range found {
		p.t.Resume = why
		ok, err := pick(&p.t)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := tx.Delete(p.key); err != nil {
			return err
		}
		if p.t.Kind == protocol.Undo {
			p.t.Compensation.Round++
			p.t.Resume += "#" + strconv.Itoa(p.t.Compensation.Round)
		}
		if err := pw.publish(tx, job, p.t); err != nil {
			return err
		}
	}
	return nil
}
