package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
)

// router is the router contour: from a finished activation and its
// committed result it decides the activations that follow. It is a
// function of values: it reads and writes nothing, and what the decision
// needs recorded or read (a windowed fan-out's elements, a compensation
// chain's next step, a body's arrival at its join) it returns as marks
// the protocol writer applies in the step's commit (writer.routeIn). It
// has no state, so replaying it gives the same answer.
type router struct{}

// routing is the router's decision for a finished activation.
type routing struct {
	// next are the activations that follow.
	next []task
	// keep holds all the elements of a fan-out under a concurrency limit,
	// which the writer keeps for the bodies that start the later ones.
	keep json.RawMessage
	// haltAt is the compensation step at which a chain that halts on a
	// failure stopped (0: none).
	haltAt int
	// undo is the compensation step that comes next (0: none): the
	// writer builds it from the undone activation's committed output.
	undo int
	// arrives is set when the activation is a forEach body: the writer
	// counts it on its fan-out (arrive) and the router's arrived decides
	// what the count leads to.
	arrives bool
}

// route decides what follows t, finished with res, in c.
func (r router) route(c *compiled, t task, res result) (routing, error) {
	switch t.Kind {
	case protocol.Body:
		return routing{arrives: true}, nil
	case protocol.Undo:
		switch u := t.Compensation; {
		case res.Failed() && c.OnCompensationFailure == runtype.CompensateHalt:
			return routing{haltAt: u.Step}, nil // step 3 says where (complete)
		case u.Step < u.Of:
			return routing{undo: u.Step + 1}, nil
		}
		return routing{}, nil
	}
	if res.Failed() {
		return routing{}, nil
	}
	n := c.byAlias[t.Node]
	if n.ForEach != nil && t.Kind != protocol.Join {
		return fanOut(t, n.ForEach, res.Output)
	}
	var out []task
	for _, edge := range c.out[t.Node] {
		if (n.Switch != nil || n.Checkpoint != nil) && edge.FromPort != res.Port {
			continue
		}
		next := task{Kind: protocol.Step, Flow: t.Flow, Node: edge.To, Dim: t.Dim, Input: res.Output, Delivery: edge.Delivery, DedupeTTL: edge.DedupeTTL,
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
	return routing{next: out}, nil
}

// fanOut starts one body activation per element, each in its own
// dimension; an empty array goes straight to the join. With a concurrency
// limit it starts that many and keeps the elements, so that each finished
// body starts the next (arrived).
func fanOut(t task, fe *runtype.ForEach, input json.RawMessage) (routing, error) {
	items, err := lookupArray(input, fe.Items)
	if err != nil {
		return routing{}, err
	}
	if len(items) == 0 {
		return routing{next: []task{joinTask(t, 0)}}, nil
	}
	var rt routing
	total, window := len(items), 0
	if fe.Concurrency > 0 && fe.Concurrency < total {
		window = fe.Concurrency
		if rt.keep, err = json.Marshal(items); err != nil {
			return routing{}, err
		}
		items = items[:window]
	}
	rt.next = make([]task, len(items))
	for i, item := range items {
		rt.next[i] = bodyTask(t.Flow, t.Act, t.Dim, t.Node, fe.Do, i, item, total, window)
		rt.next[i].Element.Grouped = true
	}
	return rt, nil
}

// bodyTask is the activation of a forEach body for element i.
func bodyTask(flow, forEachAct string, dim runtype.Dim, forEachNode, do string, i int, item json.RawMessage, expect, window int) task {
	d := dim.Element(i)
	return task{
		Kind: protocol.Body, Flow: flow, Node: do, Dim: d, Input: item, Via: forEachNode,
		Act:     runtype.StepOf(do, d, forEachNode).String(),
		Element: &protocol.Element{ForEach: forEachAct, Index: i, Expect: expect, Window: window},
	}
}

// joinTask is the join of forEach, a fan-out of expect elements.
func joinTask(forEach task, expect int) task {
	return task{Kind: protocol.Join, Flow: forEach.Flow, Node: forEach.Node, Dim: forEach.Dim, Act: runtype.JoinOf(forEach.Node, forEach.Dim).String(), Aggregate: &protocol.Aggregate{ForEach: forEach.Act, Expect: expect}}
}

// forEachOf is the forEach activation body t reports to.
func forEachOf(t task) (task, error) {
	forEachAct, err := runtype.Parse(t.Element.ForEach)
	if err != nil {
		return task{}, fmt.Errorf("forEach element %s: %w", t.Act, err)
	}
	return task{Flow: t.Flow, Node: forEachAct.Node(), Dim: t.Dim.Parent(), Act: t.Element.ForEach}, nil
}

// arrival is what a body's arrival at its join leads to, once counted.
type arrival struct {
	// join is set when the body was the fan-out's last.
	join bool
	// element is the element whose body starts next under the fan-out's
	// concurrency limit (-1: none).
	element int
}

// arrived decides what follows body t, the n-th of its fan-out to finish
// (counted on the forEach's counter, not on a shard): the join after the
// last; under a concurrency limit each finished body starts the next
// element, so Window stay in flight until the last has started.
func (r router) arrived(t task, n int64) arrival {
	e := t.Element
	if n >= int64(e.Expect) {
		return arrival{join: true, element: -1}
	}
	if next := e.Window + int(n) - 1; e.Window > 0 && next < e.Expect {
		return arrival{element: next}
	}
	return arrival{element: -1}
}

// element is the body of element i of t's fan-out, item.
func (r router) element(t task, forEach task, i int, item json.RawMessage) task {
	e := t.Element
	body := bodyTask(t.Flow, e.ForEach, t.Dim.Parent(), forEach.Node, t.Node, i, item, e.Expect, e.Window)
	body.Element.Grouped = e.Grouped // counted as the fan-out that started the group counts
	return body
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
