package engine

import (
	"bytes"
	"slices"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
)

// Foreseeing a job's end. On a store with one writer (bbolt) commits run
// one at a time, so whatever step 3 does inside one holds every other
// commit up: reading and decoding the job's record, encoding its final
// status and finished event. Most jobs close on a step that is their only
// terminal activation (the last node of a chain, the node after a
// fan-out's join), and for such a job the worker of that step has all
// step 3 needs before its commit: its own result and the job's start,
// which every task of a job without a parent carries (task.Started). So
// the worker of a step that may close its job (a task node with no edges
// out, which publishes nothing) encodes, outside the commit, the end of a
// job whose one terminal activation is its step and in which nothing
// failed. Step 3 still reads, inside the commit, how the job's activations
// ended, and writes the foreseen end only when that is what it reads:
// nothing failed, killed or compensated, and no terminal activation but
// this one. Otherwise it builds the end itself, as without foresight.
// What the commit writes is the same either way, except that a foreseen
// end's finished time is when it was foreseen, a moment before the
// commit. Reading the job in a read transaction of the worker's own
// instead was tried and measured: bbolt's commits slowed by about what
// they saved.

// foreseenEnd is the end step 3 writes when the terminal activations it
// reads are nodes and results (keys, in key order) and nothing failed.
type foreseenEnd struct {
	nodes   []string
	results [][]byte
	end     jobEnd
}

// fits reports whether f is the end of a job whose closing commit read
// out and end.
func (f *foreseenEnd) fits(out outcome, end ending) bool {
	return f != nil && !end.killed && !end.compensating && len(out.errors) == 0 && len(out.compensated) == 0 &&
		slices.Equal(out.nodes, f.nodes) && slices.EqualFunc(out.results, f.results, bytes.Equal)
}

// mayClose reports whether the step of en, whose node gave en.res, may
// close its job: a successful step of a task node with no edges out
// publishes nothing, so its commit takes the semaphore down.
func mayClose(en *entry) bool {
	t, c := en.t, en.c
	if en.res == nil || en.res.Failed() || c == nil || (t.Kind != protocol.Entry && t.Kind != protocol.Step) {
		return false
	}
	n := c.byAlias[t.Node]
	return n != nil && n.Task != nil && len(c.out[t.Node]) == 0
}

// foresee sets en.foreseen when en's step may close its job and its task
// carries the job's start (task.Started). Foresight only saves work: when
// it fails, en.foreseen stays nil and step 3 builds the end in its commit.
func (w *worker) foresee(en *entry) {
	en.foreseen = nil
	started := en.t.Started
	if w.caps.LocksRows || started == 0 || !mayClose(en) {
		return
	}
	out := outcome{nodes: []string{en.t.Node}, results: [][]byte{protocol.ResultKey(en.job, en.t.Act)}}
	st := jobStatus(out, time.Unix(0, started).UTC(), w.writes.now().UTC(), []*result{en.res}, false)
	end, err := encodeEnd(en.job, st, w.writes.retention(en.c), nil)
	if err != nil {
		return
	}
	en.foreseen = &foreseenEnd{nodes: out.nodes, results: out.results, end: end}
}
