package runtime

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
)

// Flow is a flow as the engine runs it. Generated code builds one from the
// Flow IR with typed wiring; tests build them by hand.
type Flow struct {
	Name  string
	Nodes []*FlowNode
	Edges []Edge
	// Budget bounds each job of the flow started with Engine.Start; a job
	// started as a subflow gets Subflow.Budget within its parent's.
	Budget Budget
}

// FlowNode is one node of a flow: exactly one of Runner, Switch, ForEach,
// Checkpoint or Subflow.
type FlowNode struct {
	Alias  string
	Runner Runner
	Params json.RawMessage
	// Switch routes its input unchanged to the edges leaving the port
	// named after the first matching case's label.
	Switch *Switch
	// ForEach runs the node Do once per element of the input's Items
	// array and sends the array of their outputs, in element order, on its
	// "out" port.
	ForEach *ForEach
	// Compensate undoes this node's effect when a later step of the job
	// fails; compensations run one at a time, newest first.
	Compensate *Compensation
	// Subflow runs another registered flow as this node.
	Subflow *Subflow
	// Checkpoint parks the job's branch until a human decides (Signal);
	// the input leaves unchanged on port "approved" or "rejected".
	Checkpoint *Checkpoint
}

// Subflow runs another registered flow as one node, as a child job: only
// the child's entry nodes listed in Inputs receive the parent's input (the
// boundary artifact: inline up to 64 KiB, a store reference above), and the
// node's output is the child's result, its terminal outputs by alias.
// Killing the parent kills the child.
type Subflow struct {
	Flow   string
	Inputs []string
	// MaxDepth bounds nesting (default 8): a subflow deeper than its
	// limit fails with PolicyDenied instead of starting.
	MaxDepth int
	// Budget is the child job's budget, cut down to what the parent has
	// left when the child starts (zero: all of it). A parent with nothing
	// left fails the node with PolicyDenied instead of starting the child.
	Budget Budget
}

// Compensation is how a node's effect is undone: Runner receives the
// node's output, and its idempotency key is computed from the output's
// UndoKey fields, so a repeated undo is recognised by the other side.
type Compensation struct {
	Runner  Runner
	UndoKey []string
}

// Checkpoint is a human-approval point.
type Checkpoint struct {
	Prompt string
}

// Switch selects an output port by a field of the input.
type Switch struct {
	// On is the dotted path of the field to compare.
	On    string
	Cases []Case
	// Default is the port used when no case matches; empty drops the input.
	Default string
}

// Case is one switch case: Label is taken when the field equals Equals.
type Case struct {
	Label  string
	Equals json.RawMessage
}

// ForEach fans out over an array field.
type ForEach struct {
	Items string
	Do    string
	// Aggregate decides when the join succeeds: AggregateAll (every element
	// succeeded; the default), AggregateAny (at least one) or
	// AggregateQuorum (at least Quorum). Failed elements are null in the
	// output array.
	Aggregate Aggregate
	Quorum    int
	// Concurrency bounds the body activations in flight at once (0: all
	// elements at once). Elements start in order; each finished one starts
	// the next.
	Concurrency int
}

// Aggregate is a forEach join policy.
type Aggregate string

// The join policies.
const (
	AggregateAll    Aggregate = ""
	AggregateAny    Aggregate = "any"
	AggregateQuorum Aggregate = "quorum"
)

// needed is how many elements must succeed out of n.
func (fe *ForEach) needed(n int) int {
	switch fe.Aggregate {
	case AggregateAny:
		return min(1, n)
	case AggregateQuorum:
		return min(fe.Quorum, n)
	}
	return n
}

// Edge connects an output port to a node's input. Delivery, ordering and
// partitioning are enforced by the engine per edge.
type Edge struct {
	From, FromPort string
	To             string
	// Delivery is the edge's guarantee. ExactlyOnce consults the dedupe
	// store by the target's idempotency key, so an effect already applied
	// within DedupeTTL (by this job or another) is not applied again and
	// its recorded output is used; AtMostOnce never runs a redelivered
	// activation whose first attempt did not commit.
	Delivery  Delivery
	DedupeTTL time.Duration
	// MaxIterations > 0 marks the back edge of a bounded loop. Each pass
	// runs To and everything after it again in a fresh dimensional
	// address (its own activation ids, ledgers and results), so passes
	// never overwrite each other; pass MaxIterations+1 fails the job with
	// PolicyDenied instead of running.
	MaxIterations int
}

// maxCycleIterations is the most passes a back edge may allow.
const maxCycleIterations = 1_000_000

// Delivery is an edge's delivery guarantee.
type Delivery = flowtype.Delivery

// The delivery guarantees.
const (
	AtLeastOnce = flowtype.AtLeastOnce
	AtMostOnce  = flowtype.AtMostOnce
	ExactlyOnce = flowtype.ExactlyOnce
)

// compiled is a registered flow with its lookups built once.
type compiled struct {
	*Flow
	byAlias map[string]*FlowNode
	out     map[string][]Edge // by from alias
	entries []string
	bodies  map[string]bool // aliases run only as forEach bodies
}

func compile(f *Flow) (*compiled, error) {
	c := &compiled{Flow: f, byAlias: map[string]*FlowNode{}, out: map[string][]Edge{}, bodies: map[string]bool{}}
	for _, n := range f.Nodes {
		kinds := 0
		for _, set := range []bool{n.Runner != nil, n.Switch != nil, n.ForEach != nil, n.Checkpoint != nil, n.Subflow != nil} {
			if set {
				kinds++
			}
		}
		if kinds != 1 {
			return nil, fmt.Errorf("flow %s: node %q must have exactly one of Runner, Switch, ForEach, Checkpoint, Subflow", f.Name, n.Alias)
		}
		if _, dup := c.byAlias[n.Alias]; dup {
			return nil, fmt.Errorf("flow %s: duplicate alias %q", f.Name, n.Alias)
		}
		c.byAlias[n.Alias] = n
	}
	hasIn := map[string]bool{}
	for _, e := range f.Edges {
		if c.byAlias[e.From] == nil || c.byAlias[e.To] == nil {
			return nil, fmt.Errorf("flow %s: edge %s.%s -> %s names an unknown node", f.Name, e.From, e.FromPort, e.To)
		}
		if e.MaxIterations < 0 || e.MaxIterations > maxCycleIterations {
			return nil, fmt.Errorf("flow %s: edge %s.%s -> %s: MaxIterations %d is outside 0..%d", f.Name, e.From, e.FromPort, e.To, e.MaxIterations, maxCycleIterations)
		}
		c.out[e.From] = append(c.out[e.From], e)
		if e.MaxIterations == 0 {
			hasIn[e.To] = true
		}
	}
	for _, n := range f.Nodes {
		if n.ForEach != nil {
			if c.byAlias[n.ForEach.Do] == nil {
				return nil, fmt.Errorf("flow %s: forEach %q runs unknown node %q", f.Name, n.Alias, n.ForEach.Do)
			}
			c.bodies[n.ForEach.Do] = true
		}
	}
	for _, n := range f.Nodes {
		if !hasIn[n.Alias] && !c.bodies[n.Alias] {
			c.entries = append(c.entries, n.Alias)
		}
	}
	if len(c.entries) == 0 {
		return nil, fmt.Errorf("flow %s: no entry node (every node has an incoming edge)", f.Name)
	}
	return c, nil
}
