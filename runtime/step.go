package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/fxamacker/cbor/v2"

	"github.com/flowgen-dev/flowgen/runtime/ledger"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// result is an activation's write-once outcome.
type result struct {
	Output json.RawMessage `json:"output,omitempty"`
	// Port is the output port the output leaves on ("out", or a switch
	// label; empty when a switch matched nothing).
	Port     string `json:"port,omitempty"`
	ErrKind  string `json:"errorKind,omitempty"`
	Err      string `json:"error,omitempty"`
	Attempts int    `json:"attempts"`
}

func (r result) failed() bool { return r.Err != "" }

// errRetryLater ends processing of a message that was handed back to the
// stream for a later attempt.
var errRetryLater = errors.New("retry later")

// process runs one message through the step protocol: entry, step 1 (work
// and its marker), step 2 (children, semaphore delta, job-closed snapshot
// and marker, as one commit), step 3 (job completion, exactly once), ack.
// Every commit is fenced by the job lease, so a stale worker cannot commit.
func (e *Engine) process(ctx context.Context, m store.Message) error {
	var t task
	if err := cbor.Unmarshal(m.Payload, &t); err != nil {
		return e.store.Update(ctx, func(tx store.Tx) error {
			return tx.DeadLetter(m.Receipt, fmt.Sprintf("undecodable task: %v", err))
		})
	}
	var job JobID
	copy(job[:], m.Job)
	if err := e.crash(CrashReserved); err != nil {
		return err
	}
	c, err := e.flow(t.Flow)
	if err != nil {
		return e.store.Update(ctx, func(tx store.Tx) error { return tx.DeadLetter(m.Receipt, err.Error()) })
	}
	lease, err := e.acquire(ctx, job)
	if errors.Is(err, store.ErrLeaseHeld) {
		// Another worker owns the job; let it (or us, later) take this one.
		return e.store.Update(ctx, func(tx store.Tx) error { return tx.Nack(m.Receipt, e.opts.Visibility/10) })
	}
	if err != nil {
		return err
	}
	guidKey := jobKey(job, "guid", fmt.Sprintf("%x", m.ID))
	actKey := jobKey(job, "act", t.Act)

	// Entry: count the leg 2 entry and seed the GUID ordinal once.
	var g ledger.GUID
	var killed bool
	err = e.store.Update(ctx, func(tx store.Tx) error {
		if err := tx.Fence(lease); err != nil {
			return err
		}
		_, err := tx.Get(jobKey(job, "tomb"))
		killed = err == nil
		a, err := tx.Counter(actKey)
		if err != nil {
			return err
		}
		d, err := ledger.Activity(a).Leg2EntryDelta()
		if err != nil {
			return err
		}
		a, err = tx.Add(actKey, d, ledger.MaxValue)
		if err != nil {
			return err
		}
		cur, err := tx.Counter(guidKey)
		if err != nil {
			return err
		}
		if cur == 0 {
			seed, err := ledger.NewGUID(ledger.Activity(a).Leg2Entries())
			if err != nil {
				return err
			}
			if cur, err = tx.Add(guidKey, int64(seed), ledger.MaxValue); err != nil {
				return err
			}
		}
		g = ledger.GUID(cur)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: entry: %w", t.Act, err)
	}
	if err := e.crash(CrashEntered); err != nil {
		return err
	}

	// Step 1: run the activation and commit its result with the marker.
	if !g.WorkDone() {
		var res result
		if killed {
			res = result{ErrKind: "Canceled", Err: "job was killed", Attempts: m.Attempt}
		} else {
			res, err = e.work(ctx, c, job, t, m)
			if errors.Is(err, errRetryLater) {
				return nil
			}
			if err != nil {
				return err
			}
		}
		if err := e.crash(CrashWorked); err != nil {
			return err
		}
		raw, err := json.Marshal(res)
		if err != nil {
			return err
		}
		err = e.store.Update(ctx, func(tx store.Tx) error {
			if err := tx.Fence(lease); err != nil {
				return err
			}
			if err := tx.PutOnce(jobKey(job, "res", t.Act), raw); err != nil {
				return err
			}
			_, err := tx.Add(guidKey, ledger.WorkDone, ledger.MaxValue)
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: step 1: %w", t.Act, err)
		}
		if err := e.crash(CrashStep1); err != nil {
			return err
		}
	}

	// Step 2: publish what follows, move the semaphore and capture the
	// job-closed snapshot, all in one commit.
	if !g.ChildrenSpawned() {
		err = e.store.Update(ctx, func(tx store.Tx) error {
			if err := tx.Fence(lease); err != nil {
				return err
			}
			raw, err := tx.Get(jobKey(job, "res", t.Act))
			if err != nil {
				return err
			}
			var res result
			if err := json.Unmarshal(raw, &res); err != nil {
				return err
			}
			children, err := e.route(tx, c, job, t, res)
			if err != nil {
				return err
			}
			for _, child := range children {
				if err := e.publish(tx, job, child); err != nil {
					return err
				}
			}
			if len(children) == 0 && t.Join == "" {
				if err := tx.Put(jobKey(job, "term", t.Act), []byte(t.Node)); err != nil {
					return err
				}
			}
			if _, err := tx.Collate(jobKey(job, "sem"), ledger.SemaphoreDelta(len(children)), 0, guidKey, ledger.JobClosed); err != nil {
				return err
			}
			_, err = tx.Add(guidKey, ledger.ChildrenSpawned, ledger.MaxValue)
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: step 2: %w", t.Act, err)
		}
		if err := e.crash(CrashStep2); err != nil {
			return err
		}
	}

	// Step 3: the message that closed the job completes it, exactly once.
	err = e.store.Update(ctx, func(tx store.Tx) error {
		cur, err := tx.Counter(guidKey)
		if err != nil {
			return err
		}
		if !ledger.GUID(cur).NeedsCompletion() {
			return nil
		}
		if err := tx.Fence(lease); err != nil {
			return err
		}
		if err := e.complete(tx, job); err != nil {
			return err
		}
		if _, err := tx.Add(guidKey, ledger.CompletionDone, ledger.MaxValue); err != nil {
			return err
		}
		a, err := tx.Counter(actKey)
		if err != nil {
			return err
		}
		if d, err := ledger.Activity(a).FinalizeDelta(); err == nil {
			_, err = tx.Add(actKey, d, ledger.MaxValue)
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: step 3: %w", t.Act, err)
	}
	if err := e.crash(CrashStep3); err != nil {
		return err
	}

	// Ack, always. A stale receipt means another delivery already did.
	err = e.store.Update(ctx, func(tx store.Tx) error { return tx.Ack(m.Receipt) })
	if err != nil && !errors.Is(err, store.ErrStaleReceipt) {
		return fmt.Errorf("%s: ack: %w", t.Act, err)
	}
	return e.crash(CrashAcked)
}

func (e *Engine) crash(point string) error {
	if e.opts.CrashPoint == nil {
		return nil
	}
	return e.opts.CrashPoint(point)
}

func (e *Engine) acquire(ctx context.Context, job JobID) (store.Lease, error) {
	var l store.Lease
	err := e.store.Update(ctx, func(tx store.Tx) error {
		var err error
		l, err = tx.AcquireLease(job[:], e.opts.Owner, e.opts.LeaseTTL)
		return err
	})
	return l, err
}

// complete writes the job's final status from its activations' results.
func (e *Engine) complete(tx store.Tx, job JobID) error {
	st := JobStatus{State: StateSucceeded, Result: map[string]json.RawMessage{}}
	prefix := jobPrefix(job, "res")
	err := tx.Scan(prefix, func(k, v []byte) error {
		var r result
		if err := json.Unmarshal(v, &r); err != nil {
			return err
		}
		if r.failed() {
			st.State = StateFailed
			st.Errors = append(st.Errors, fmt.Sprintf("%s: %s: %s", strings.TrimPrefix(string(k), string(prefix)), r.ErrKind, r.Err))
		}
		return nil
	})
	if err != nil {
		return err
	}
	termPrefix := jobPrefix(job, "term")
	err = tx.Scan(termPrefix, func(k, v []byte) error {
		act := strings.TrimPrefix(string(k), string(termPrefix))
		raw, err := tx.Get(jobKey(job, "res", act))
		if err != nil {
			return err
		}
		var r result
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		if !r.failed() && r.Output != nil {
			st.Result[string(v)] = r.Output
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := tx.Get(jobKey(job, "tomb")); err == nil {
		st.State = StateKilled
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return tx.Put(jobKey(job, "status"), raw)
}
