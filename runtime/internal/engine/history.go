package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// A job's history is append-only: one value per event under
// pid/<root>/hist/<time>.<seq>/<event>[/<act>], put in the transaction of the
// state change it describes (no commit of its own), so it says what
// committed and when, and nothing that did not. Keys sort by time;
// inspection lists them in that order. A job's start and end and an
// activation's outcome (succeeded, failed, canceled) are the exceptions:
// the job's record, its final status and the result record their place
// in the history (jobMeta.Recorded, endRecord.Recorded, result.Recorded)
// and are the events (startedEvent, finishedEvent, outcomeEvent), so the
// commits that write them write one value, not two. A timer's firing
// keeps a value of its own (its event says when it was due, which its
// result does not), and so do the events of jobs and results written
// before they were events.

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
	return preparedEvent{protocol.HistoryKey(job, ev.At, nextHistorySeq(), ev.Event, ev.Act), raw}, nil
}

// nextPlace is the place (protocol.HistoryPlace) of an event at at in its job's
// history, for a record that is its own event (a job's record, its final
// status, a result).
func nextPlace(at time.Time) string { return protocol.HistoryPlace(at, nextHistorySeq()) }

// nextHistorySeq is the next of historySeq's numbers, as history keys
// spell it (six digits).
func nextHistorySeq() uint64 { return historySeq.Add(1) % 1_000_000 }

// put records p in tx.
func (p preparedEvent) put(tx store.Tx) error { return tx.Put(p.key, p.raw) }

// historySeq orders the events a process records at one clock reading
// (two in one commit, or a coarse or fake clock).
var historySeq atomic.Uint64

// record is the package record on the engine's clock.
func (pw *protocolWriter) record(tx store.Tx, job runtype.JobID, ev runtype.HistoryEvent) error {
	return record(tx, pw.now(), job, ev)
}

// timerEvent is the history event of a timer's firing, whose result r
// woke it at wake (Unix nanoseconds).
func timerEvent(r *result, wake int64) runtype.HistoryEvent {
	return runtype.HistoryEvent{At: r.Finished, Event: runtype.EventTimerFired, Act: r.Act, Attempt: r.Attempts, Since: r.Since,
		Detail: "woke at " + time.Unix(0, wake).UTC().Format(time.RFC3339Nano)}
}

// finishedEvent is the history event that a finished job's status is.
func finishedEvent(st runtype.JobStatus) runtype.HistoryEvent {
	return runtype.HistoryEvent{At: st.Finished, Event: runtype.EventFinished, Detail: string(st.State)}
}

// startedEvent is the history event that a job's record (meta) is.
func startedEvent(meta jobMeta) runtype.HistoryEvent {
	return runtype.HistoryEvent{At: meta.Started, Event: runtype.EventStarted, Detail: "flow " + meta.Flow + " " + describeDefinition(meta.Version, meta.Hash)}
}

// outcomeEvent is the history event that the committed result r is: the
// activation's outcome, at the time r was sealed.
func outcomeEvent(r *result) runtype.HistoryEvent {
	ev := runtype.HistoryEvent{At: r.Finished, Event: runtype.EventSucceeded, Act: r.Act, Attempt: r.Attempts, Since: r.Since}
	switch {
	case !r.Failed() && r.Cached != "":
		ev.Detail = "cached output of job " + r.Cached
	case !r.Failed():
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

// history is the history of the job whose entries (keys under its root,
// in key order) are given, oldest first: its events' values, its record
// as its start (startedEvent), its final status as its end
// (finishedEvent) and the results that are their activations' outcomes
// (outcomeEvent), each at its place.
func history(entries []runtype.InspectionEntry) []runtype.HistoryEvent {
	type placed struct {
		at string
		ev runtype.HistoryEvent
	}
	var events []placed
	for _, e := range entries {
		switch {
		case strings.HasPrefix(e.Key, "hist/"):
			var ev runtype.HistoryEvent
			if json.Unmarshal(e.Value, &ev) == nil {
				at, _, _ := strings.Cut(strings.TrimPrefix(e.Key, "hist/"), "/")
				events = append(events, placed{at, ev})
			}
		case e.Key == "status":
			var end endRecord
			if json.Unmarshal(e.Value, &end) == nil && end.Recorded != "" {
				events = append(events, placed{end.Recorded, finishedEvent(end.JobStatus)})
			}
		case e.Key == "meta":
			var meta jobMeta
			if json.Unmarshal(e.Value, &meta) == nil && meta.Recorded != "" {
				events = append(events, placed{meta.Recorded, startedEvent(meta)})
			}
		case strings.HasPrefix(e.Key, "res/"):
			var r result
			if json.Unmarshal(e.Value, &r) == nil && r.Recorded != "" {
				events = append(events, placed{r.Recorded, outcomeEvent(&r)})
			}
		}
	}
	slices.SortStableFunc(events, func(a, b placed) int { return strings.Compare(a.at, b.at) })
	out := make([]runtype.HistoryEvent, len(events))
	for i, p := range events {
		out[i] = p.ev
	}
	return out
}
