package engine

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// A job's history is append-only: one value per event under
// pid/<root>/hist/<time>.<seq>/<event>[/<act>], put in the transaction of the
// state change it describes (no commit of its own), so it says what
// committed and when, and nothing that did not. Keys sort by time;
// inspection lists them in that order.

// record puts ev into job's history in tx, stamped now unless ev has a
// time.
func record(tx store.Tx, now time.Time, job runtype.JobID, ev runtype.HistoryEvent) error {
	p, err := prepareEvent(now, job, ev)
	if err != nil {
		return err
	}
	return p.put(tx)
}

// preparedEvent is a history event encoded, with its key, before the
// transaction that records it: on bbolt, whose commits run one at a time,
// encoding inside one holds every other commit up.
type preparedEvent struct{ key, raw []byte }

// prepareEvent encodes ev of job, stamped now unless ev has a time.
func prepareEvent(now time.Time, job runtype.JobID, ev runtype.HistoryEvent) (preparedEvent, error) {
	if ev.At.IsZero() {
		ev.At = now.UTC()
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		return preparedEvent{}, err
	}
	return preparedEvent{historyKey(job, ev.At, historySeq.Add(1)%1_000_000, ev.Event, ev.Act), raw}, nil
}

// put records p in tx.
func (p preparedEvent) put(tx store.Tx) error { return tx.Put(p.key, p.raw) }

// historySeq orders the events a process records at one clock reading
// (two in one commit, or a coarse or fake clock).
var historySeq atomic.Uint64

// record is the package record on the engine's clock.
func (e *Engine) record(tx store.Tx, job runtype.JobID, ev runtype.HistoryEvent) error {
	return record(tx, e.now(), job, ev)
}

// resultEvent is the history event of an activation's committed result.
func resultEvent(en *entry, r *result) runtype.HistoryEvent {
	ev := runtype.HistoryEvent{Event: runtype.EventSucceeded, Act: en.t.Act, Attempt: r.Attempts, Since: en.entered.UTC()}
	switch {
	case !r.failed() && en.t.Resume == timerResume:
		ev.Event, ev.Detail = runtype.EventTimerFired, "woke at "+time.Unix(0, en.t.Wake).UTC().Format(time.RFC3339Nano)
	case !r.failed() && r.Cached != "":
		ev.Detail = "cached output of job " + r.Cached
	case !r.failed():
		if r.Port != "" && r.Port != "out" {
			ev.Detail = "port " + r.Port
		}
	case r.ErrKind == runtype.Canceled:
		ev.Event = runtype.EventCanceled
	default:
		ev.Event, ev.Detail = runtype.EventFailed, fmt.Sprintf("%s: %s", r.ErrKind, r.Err)
	}
	return ev
}
