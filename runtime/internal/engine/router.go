package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// router is the router contour: from a finished activation and its
// committed result it decides the activations that follow, reading and
// writing only through the step's transaction. It has no state, so
// replaying it gives the same answer.
type router struct{}

// route is the router contour: from a finished activation and its
// committed result it decides the activations that follow. It reads only
// committed state, so replaying it gives the same answer.
//
// A body that completes a shard of its fan-out returns it as a gather
// instead of counting it on the forEach's counter: the caller counts every
// gather of its transaction last (gatherAll).
func (r router) route(tx store.Tx, c *compiled, job runtype.JobID, t task, res result) ([]task, *gather, error) {
	if t.Join != "" {
		return r.reportToJoin(tx, job, t)
	}
	children, err := r.follow(tx, c, job, t, res)
	return children, nil, err
}

// follow decides the activations that follow a finished activation that
// is not a forEach body.
func (r router) follow(tx store.Tx, c *compiled, job runtype.JobID, t task, res result) ([]task, error) {
	if t.Kind == runtype.Undo {
		if res.failed() && c.OnCompensationFailure == runtype.CompensateHalt {
			// The chain stops here; step 3 says where (complete).
			return nil, tx.Put(protocol.CompensationHaltKey(job), []byte(strconv.Itoa(t.Undo)))
		}
		return nextCompensation(tx, job, t)
	}
	if res.failed() {
		return nil, nil
	}
	n := c.byAlias[t.Node]
	if n.ForEach != nil && t.Kind != runtype.Join {
		return fanOut(tx, job, t, n.ForEach, res.Output)
	}
	var out []task
	for _, edge := range c.out[t.Node] {
		if (n.Switch != nil || n.Checkpoint != nil) && edge.FromPort != res.Port {
			continue
		}
		next := task{Kind: runtype.Step, Flow: t.Flow, Node: edge.To, Dim: t.Dim, Input: res.Output, Delivery: edge.Delivery, DedupeTTL: edge.DedupeTTL,
			Via: t.Node + "." + edge.FromPort, Partition: edge.PartitionKey}
		if edge.MaxIterations > 0 {
			var pass int
			next.Dim, pass = t.Dim.Reenter(edge.To)
			if pass > edge.MaxIterations {
				next.Refused = fmt.Sprintf("loop back to %s from %s.%s: pass %d exceeds maxIterations %d", edge.To, t.Node, edge.FromPort, pass, edge.MaxIterations)
			}
		}
		next.Act = runtype.StepOf(edge.To, next.Dim, t.Node).String()
		out = append(out, next)
	}
	return out, nil
}

// fanOut starts one body activation per element, each in its own
// dimension; an empty array goes straight to the join. With a concurrency
// limit it starts that many and keeps the elements, so that each finished
// body starts the next (reportToJoin).
func fanOut(tx store.Tx, job runtype.JobID, t task, fe *runtype.ForEach, input json.RawMessage) ([]task, error) {
	items, err := lookupArray(input, fe.Items)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return []task{joinTask(t, 0)}, nil
	}
	total, window := len(items), 0
	if fe.Concurrency > 0 && fe.Concurrency < total {
		window = fe.Concurrency
		all, err := json.Marshal(items)
		if err != nil {
			return nil, err
		}
		if err := tx.Put(protocol.ItemsKey(job, t.Act), all); err != nil {
			return nil, err
		}
		items = items[:window]
	}
	out := make([]task, len(items))
	for i, item := range items {
		out[i] = bodyTask(t.Flow, t.Act, t.Dim, t.Node, fe.Do, i, item, total, window)
		out[i].Grouped = true
	}
	return out, nil
}

// bodyTask is the activation of a forEach body for element i.
func bodyTask(flow, forEachAct string, dim runtype.Dim, forEachNode, do string, i int, item json.RawMessage, expect, window int) task {
	d := dim.Element(i)
	return task{
		Kind: runtype.Step, Flow: flow, Node: do, Dim: d, Input: item, Via: forEachNode,
		Act:  runtype.StepOf(do, d, forEachNode).String(),
		Join: forEachAct, Index: i, Expect: expect, Window: window,
	}
}

// joinTask is the join of forEach, a fan-out of expect elements.
func joinTask(forEach task, expect int) task {
	return task{Kind: runtype.Join, Flow: forEach.Flow, Node: forEach.Node, Dim: forEach.Dim, Act: runtype.JoinOf(forEach.Node, forEach.Dim).String(), JoinOf: forEach.Act, Expect: expect}
}

// forEachOf is the forEach activation body t reports to.
func forEachOf(t task) (task, error) {
	forEachAct, err := runtype.Parse(t.Join)
	if err != nil {
		return task{}, fmt.Errorf("forEach element %s: %w", t.Act, err)
	}
	return task{Flow: t.Flow, Node: forEachAct.Node(), Dim: t.Dim.Parent(), Act: t.Join}, nil
}

// reportToJoin counts a finished body activation on its forEach; the one
// that completes the count publishes the join, in the same commit. A body
// of a sharded fan-out counts on its shard, and one that completes the
// shard returns it as a gather.
func (r router) reportToJoin(tx store.Tx, job runtype.JobID, t task) ([]task, *gather, error) {
	forEach, err := forEachOf(t)
	if err != nil {
		return nil, nil, err
	}
	if shard, size, shards := shardOf(t); shards > 0 {
		n, err := tx.Add(protocol.AggregateShardKey(job, t.Join, shard), 1, int64(size))
		if err != nil || n < int64(size) {
			return nil, nil, err
		}
		return nil, &gather{job: job, body: t}, nil
	}
	n, err := tx.Add(protocol.AggregateKey(job, t.Join), 1, int64(t.Expect))
	if err != nil {
		return nil, nil, err
	}
	if n < int64(t.Expect) {
		// Under a concurrency limit each finished body starts the next
		// element, so Window stay in flight until the last has started.
		if next := t.Window + int(n) - 1; t.Window > 0 && next < t.Expect {
			raw, err := tx.Get(protocol.ItemsKey(job, t.Join))
			if err != nil {
				return nil, nil, fmt.Errorf("forEach %s: elements: %w", t.Join, err)
			}
			var items []json.RawMessage
			if err := json.Unmarshal(raw, &items); err != nil || next >= len(items) {
				return nil, nil, fmt.Errorf("forEach %s: element %d of %d: %v", t.Join, next, len(items), err)
			}
			body := bodyTask(t.Flow, t.Join, t.Dim.Parent(), forEach.Node, t.Node, next, items[next], t.Expect, t.Window)
			body.Grouped = t.Grouped // counted as the fan-out that started the group counts
			return []task{body}, nil, nil
		}
		return nil, nil, nil
	}
	return []task{joinTask(forEach, t.Expect)}, nil, nil
}

// lookup returns the value at a dotted path of a JSON object.
func lookup(doc json.RawMessage, path string) (json.RawMessage, error) {
	cur := doc
	for _, part := range strings.Split(path, ".") {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(cur, &obj); err != nil {
			return nil, fmt.Errorf("%s: not an object at %q", path, part)
		}
		next, ok := obj[part]
		if !ok {
			return nil, fmt.Errorf("%s: no field %q", path, part)
		}
		cur = next
	}
	return cur, nil
}

func lookupArray(doc json.RawMessage, path string) ([]json.RawMessage, error) {
	v, err := lookup(doc, path)
	if err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		return nil, fmt.Errorf("%s: not an array", path)
	}
	return items, nil
}

// switchPort evaluates a switch on its input.
func switchPort(sw *runtype.Switch, input json.RawMessage) string {
	v, err := lookup(input, sw.On)
	if err != nil {
		return sw.Default
	}
	for _, c := range sw.Cases {
		if jsonEqual(v, c.Equals) {
			return c.Label
		}
	}
	return sw.Default
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
