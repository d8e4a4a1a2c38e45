package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/ledger"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// InspectJob reads a job's whole state from s without an engine: one
// prefix scan of its root (values and counters), plus the job's messages
// still in the work stream or its dead-letter stream, which name the
// activations not yet finished.
func InspectJob(ctx context.Context, s store.Store, job runtype.JobID) (*runtype.Inspection, error) {
	in := &runtype.Inspection{Job: job.String()}
	prefix := protocol.RootPrefix(job)
	var queued []store.Message
	err := s.View(ctx, func(tx store.ReadTx) error {
		err := tx.Scan(prefix, func(k, v []byte) error {
			e := runtype.InspectionEntry{Key: strings.TrimPrefix(string(k), string(prefix))}
			if json.Valid(v) {
				e.Value = append(json.RawMessage(nil), v...)
			} else {
				e.Text = string(v)
			}
			in.Entries = append(in.Entries, e)
			return nil
		})
		if err != nil {
			return err
		}
		err = tx.ScanCounters(prefix, func(k []byte, v int64) error {
			key := strings.TrimPrefix(string(k), string(prefix))
			e := runtype.InspectionEntry{Key: key, Counter: &v, Words: counterWords(key, v)}
			in.Entries = append(in.Entries, e)
			return nil
		})
		if err != nil {
			return err
		}
		for _, stream := range []string{runtype.WorkStream, protocol.DeadStream} {
			pending, err := tx.Pending(stream)
			if err != nil {
				return err
			}
			for _, m := range pending {
				if bytes.Equal(m.Job, job[:]) {
					queued = append(queued, m)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("inspect %s: %w", job, err)
	}
	if len(in.Entries) == 0 {
		return nil, fmt.Errorf("inspect %s: no such job: %w", job, store.ErrNotFound)
	}
	arrangeTree(in, queued)
	return in, nil
}

func counterWords(key string, v int64) string {
	kind, _, _ := strings.Cut(key, "/")
	switch kind {
	case "act":
		return ledger.Activity(v).Words()
	case "guid":
		return ledger.GUID(v).Words()
	case "sem":
		return fmt.Sprintf("%d open obligations", v)
	case "agg":
		return fmt.Sprintf("%d children finished", v)
	case "spent":
		return fmt.Sprintf("%d activations charged to the budget", v)
	}
	return ""
}

// arrangeTree arranges the activations the entries and queued messages name:
// forEach elements under their forEach, everything else in dimension and
// id order.
func arrangeTree(in *runtype.Inspection, queued []store.Message) {
	byKey := map[string]runtype.InspectionEntry{}
	for _, e := range in.Entries {
		byKey[e.Key] = e
	}
	readJobRecords(in, byKey)
	in.History = history(in.Entries)
	views := activationViews{}
	views.fromResults(in.Entries)
	views.fromQueued(queued)
	views.fromRecords(in.Entries, byKey)
	roots := views.nestForEaches()
	sortInFlowOrder(roots, nodeDepths(views))
	in.Tree = roots
	in.Summary = summarize(in.Status, byKey)
}

// readJobRecords fills in's status and what the job's meta says.
func readJobRecords(in *runtype.Inspection, byKey map[string]runtype.InspectionEntry) {
	var meta jobMeta
	if st, ok := byKey["status"]; ok {
		json.Unmarshal(st.Value, &in.Status)
	}
	if m, ok := byKey["meta"]; ok && json.Unmarshal(m.Value, &meta) == nil {
		if _, ended := byKey["status"]; !ended { // see readStatus
			in.Status = runningSince(meta.Started)
		}
		in.Flow, in.Version, in.Key, in.Input = meta.Flow, meta.Version, meta.Key, meta.Input
		if in.Definition = meta.Hash; len(in.Definition) > 16 {
			in.Definition = in.Definition[:16]
		}
		if meta.Parent != nil {
			in.Parent = meta.Parent.Job
		}
	}
}

// activationViews are a job's activations as inspection shows them, by
// activation id.
type activationViews map[string]*runtype.ActivationView

// view returns act's view, made on first use.
func (views activationViews) view(act string) *runtype.ActivationView {
	if v, ok := views[act]; ok {
		return v
	}
	v := newActivationView(act)
	views[act] = v
	return v
}

// fromResults fills the views of the activations with a result.
func (views activationViews) fromResults(entries []runtype.InspectionEntry) {
	for _, e := range entries {
		if !strings.HasPrefix(e.Key, "res/") {
			continue
		}
		var r result
		if json.Unmarshal(e.Value, &r) != nil || r.Act == "" {
			continue
		}
		v := views.view(r.Act)
		v.Attempts, v.Elements, v.Finished, v.Port = r.Attempts, r.Elements, r.Finished, r.Port
		switch {
		case !r.Failed():
			v.State, v.Output = runtype.ActivationSucceeded, r.Output
		case r.ErrKind == runtype.Canceled:
			v.State = runtype.ActivationCanceled
		case r.TimedOut:
			v.State = runtype.ActivationTimeout
		default:
			v.State = runtype.ActivationFailed
		}
		if v.Error = r.Err; r.Failed() && !strings.HasPrefix(r.Err, string(r.ErrKind)+":") {
			v.Error = string(r.ErrKind) + ": " + r.Err
		}
	}
}

// fromQueued fills the views of the unfinished activations with a
// message: enqueued, launched or dead-lettered.
func (views activationViews) fromQueued(queued []store.Message) {
	for _, m := range queued {
		var t task
		if cbor.Unmarshal(m.Payload, &t) != nil {
			continue
		}
		v := views.view(t.Act)
		if v.State != "" {
			continue // finished; the message awaits its ack or step 3
		}
		v.State, v.Attempts = runtype.ActivationEnqueued, m.Attempt
		switch {
		case m.Stream == protocol.DeadStream:
			v.State, v.Error = runtype.ActivationDeadLettered, m.Reason
		case m.Attempt > 0:
			v.State = runtype.ActivationLaunched
		}
		if t.Kind == protocol.Body {
			v.Index = t.Element.Index
		}
	}
}

// fromRecords adds what the job's other records say of its activations:
// waiting for a worker with their flow, parked, their ledgers and child
// jobs.
func (views activationViews) fromRecords(entries []runtype.InspectionEntry, byKey map[string]runtype.InspectionEntry) {
	for _, e := range entries {
		var rec unservedRecord
		if strings.HasPrefix(e.Key, "unserved/") && json.Unmarshal(e.Value, &rec) == nil {
			if v := views.view(rec.Act); v.State == "" || v.State == runtype.ActivationEnqueued || v.State == runtype.ActivationLaunched {
				v.Error = fmt.Sprintf("waits for a worker with its flow definition %s (handed back %d time(s) since %s): %s",
					rec.Flow, rec.Seen, rec.Since.Format(time.RFC3339), rec.Reason)
			}
		}
	}
	for _, e := range entries {
		var t task
		if strings.HasPrefix(e.Key, "wait/") && cbor.Unmarshal([]byte(e.Text), &t) == nil && t.Act != "" {
			if v := views.view(t.Act); v.State == "" {
				v.State = runtype.ActivationParked
			}
		}
	}
	for act, v := range views {
		seg := protocol.Segment(act)
		if c, ok := byKey["act/"+seg]; ok && c.Counter != nil {
			v.Ledger, v.LedgerWords = *c.Counter, c.Words
		}
		if c, ok := byKey["sub/"+seg]; ok && len(c.Text) == len(runtype.JobID{}) {
			v.Child = runtype.JobID([]byte(c.Text)).String()
		}
		if _, ok := byKey["wait/"+seg]; ok && v.State != runtype.ActivationSucceeded && v.State != runtype.ActivationFailed {
			v.State = runtype.ActivationParked
		}
	}
}

// nestForEaches puts forEach elements under their forEach, with the
// elements never started as pending, and returns the views left at the
// top.
func (views activationViews) nestForEaches() []*runtype.ActivationView {
	var roots []*runtype.ActivationView
	type place struct {
		node string
		dim  runtype.Dim
	}
	forEaches := map[place]*runtype.ActivationView{}
	for _, v := range views {
		if v.Elements > 0 {
			forEaches[place{v.Node, v.ID().Dim()}] = v
		}
	}
	for _, v := range views {
		if parent := forEaches[place{v.ID().From(), v.ID().Dim().Parent()}]; parent != nil && v.Index >= 0 {
			parent.Children = append(parent.Children, v)
			continue
		}
		roots = append(roots, v)
	}
	for _, fe := range forEaches {
		started := map[int]bool{}
		for _, c := range fe.Children {
			started[c.Index] = true
		}
		for i := range fe.Elements {
			if !started[i] {
				fe.Children = append(fe.Children, &runtype.ActivationView{Act: fmt.Sprintf("element %d", i), Index: i, Dim: fe.Dim + "/" + strconv.Itoa(i), State: runtype.ActivationPending})
			}
		}
		slices.SortFunc(fe.Children, func(a, b *runtype.ActivationView) int { return a.Index - b.Index })
	}
	return roots
}

// sortInFlowOrder sorts roots within a dimension in flow order: by
// distance from an entry node along the predecessors the activation ids
// name (depth), a join after its forEach.
func sortInFlowOrder(roots []*runtype.ActivationView, depth map[string]int) {
	slices.SortFunc(roots, func(a, b *runtype.ActivationView) int {
		if c := strings.Compare(a.Dim, b.Dim); c != 0 {
			return c
		}
		if c := depth[a.Node] - depth[b.Node]; c != 0 {
			return c
		}
		if aj, bj := a.ID().Kind() == runtype.Join, b.ID().Kind() == runtype.Join; aj != bj {
			if aj {
				return 1
			}
			return -1
		}
		return strings.Compare(a.Act, b.Act)
	})
}

// nodeDepths is each node's distance from an entry node (an activation
// with no predecessor), breadth first over the predecessor links.
func nodeDepths(views map[string]*runtype.ActivationView) map[string]int {
	succ := map[string][]string{}
	depth := map[string]int{}
	var queue []string
	for _, v := range views {
		if v.ID().Kind() == runtype.Step {
			succ[v.ID().From()] = append(succ[v.ID().From()], v.Node)
		} else if _, seen := depth[v.Node]; !seen && v.ID().Kind() == runtype.Entry {
			depth[v.Node] = 0
			queue = append(queue, v.Node)
		}
	}
	for ; len(queue) > 0; queue = queue[1:] {
		for _, next := range succ[queue[0]] {
			if _, seen := depth[next]; !seen {
				depth[next] = depth[queue[0]] + 1
				queue = append(queue, next)
			}
		}
	}
	return depth
}

// newActivationView is the view of the activation act; an id that does
// not parse (from a store written by a foreign tool) is shown as it is.
func newActivationView(act string) *runtype.ActivationView {
	v := &runtype.ActivationView{Act: act, Node: act, Index: -1}
	if id, err := runtype.Parse(act); err == nil {
		v.Node, v.Dim, v.Index = id.Node(), string(id.Dim()), id.Dim().Index()
	}
	return v
}

func summarize(st runtype.JobStatus, byKey map[string]runtype.InspectionEntry) string {
	parts := []string{string(st.State)}
	if c, ok := byKey["sem"]; ok && c.Counter != nil {
		parts = append(parts, c.Words)
	}
	if c, ok := byKey["spent"]; ok && c.Counter != nil {
		parts = append(parts, c.Words)
	}
	if _, ok := byKey["tomb"]; ok {
		parts = append(parts, "killed")
	}
	if _, ok := byKey["paused"]; ok {
		parts = append(parts, "paused")
	}
	return strings.Join(parts, ", ")
}
